import type { Logger } from 'pino';
import { type RepositoryScout, rulesOf, type ScoutReport } from '../../core/repository-scout.ts';
import type { SessionRecord } from '../../core/session-record.ts';
import { branchName } from '../../git/branch-name.ts';
import type { GateDeps } from '../gates/gate-deps.ts';
import { effectiveKnowledge, type KnowledgeStore } from './knowledge-store.ts';
import { knowledgeKey } from './load-knowledge.ts';

/** A first pass waits at most this long: a slow GitHub delays a session's start, never stops it. */
const firstPassMs = 60_000;

/**
 * The scout passes of this process: a repository's first session waits for its pass; a
 * later one whose report is older than `maxAgeMs` gets the stored rules and a refresh in the
 * background, one at a time per repository. A pass that fails leaves the rules as they were.
 */
export class ScoutPasses {
  readonly #scouts: readonly RepositoryScout[];
  readonly #maxAgeMs: number;
  readonly #refreshing = new Map<string, Promise<void>>();
  readonly #stopping = new AbortController();

  constructor(scouts: readonly RepositoryScout[], options: { maxAgeMs: number }) {
    this.#scouts = scouts;
    this.#maxAgeMs = options.maxAgeMs;
  }

  /** The repository's scouted rules as its document has them (a person's edit included), scouting first when never scouted. */
  async report(
    repo: string,
    store: KnowledgeStore,
    log: Logger,
    signal: AbortSignal,
  ): Promise<ScoutReport | undefined> {
    const key = knowledgeKey(repo);
    const stored = await store.get(key);
    const scoutedAt = stored?.extracted.scouted?.at;
    if (scoutedAt === undefined) {
      await this.#pass(repo, store, log, AbortSignal.any([signal, AbortSignal.timeout(firstPassMs)]));
      const now = await store.get(key);
      return now && effectiveKnowledge(now).scouted;
    }
    if (Date.now() - Date.parse(scoutedAt) > this.#maxAgeMs && !this.#refreshing.has(key)) {
      const stop = AbortSignal.any([this.#stopping.signal, AbortSignal.timeout(firstPassMs)]);
      const refresh = this.#pass(repo, store, log, stop).finally(() => this.#refreshing.delete(key));
      this.#refreshing.set(key, refresh);
    }
    return stored && effectiveKnowledge(stored).scouted;
  }

  /** Waits for the background refreshes under way (tests). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#refreshing.values()]);
  }

  /** Stops the background refreshes (shutdown): their rules stay as they were. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.settled();
  }

  async #pass(repo: string, store: KnowledgeStore, log: Logger, signal: AbortSignal): Promise<void> {
    for (const scout of this.#scouts) {
      try {
        const report = await scout.scout(repo, signal);
        if (!report) continue;
        await store.saveScouted(knowledgeKey(repo), report);
        log.info(
          { repo, scout: scout.name, pulls: report.pullsRead, calls: report.calls, rules: report.rules.length },
          'repository scouted',
        );
        return;
      } catch (error) {
        if (signal.aborted && this.#stopping.signal.aborted) return;
        log.warn({ err: error, repo, scout: scout.name }, 'the scout could not read the repository; its rules stay');
      }
    }
  }
}

/** A new session's branch: in the repository's learned convention (`fix/…`) when the scout found one. */
export async function sessionBranch(
  session: Pick<SessionRecord, 'id' | 'title' | 'repo'>,
  gates: GateDeps | undefined,
  log: Logger,
  signal: AbortSignal,
): Promise<string> {
  const report = gates?.scout
    ? await gates.scout.report(session.repo, gates.knowledge, log, signal)
    : await storedReport(gates, session.repo);
  const prefix = rulesOf(report?.rules, 'branch-prefix')[0]?.prefix;
  return branchName(session.id, session.title, prefix);
}

/** The rules the repository's document has now, without scouting (a process with no scout). */
async function storedReport(gates: GateDeps | undefined, repo: string): Promise<ScoutReport | undefined> {
  const stored = gates && (await gates.knowledge.get(knowledgeKey(repo)));
  return stored && effectiveKnowledge(stored).scouted;
}

/** Whether the repository checks the DCO sign-off (a person's edit of its rules included). */
export async function signOffRequired(gates: GateDeps | undefined, repo: string): Promise<boolean> {
  return rulesOf((await storedReport(gates, repo))?.rules, 'check').some((check) => check.signOff);
}
