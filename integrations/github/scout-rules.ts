import { ScoutRule, type SourcedRule } from '../../src/core/repository-scout.ts';

/** A closed pull request as the scout read it. */
export type ScoutedPull = {
  number: number;
  url: string;
  title: string;
  head: string;
  merged: boolean;
  /** Statuses and check runs on its head commit; undefined when the scout did not sample it. */
  checks?: { name: string; url?: string }[];
  /** Comments by bots and maintainers, for the closed-unmerged ones the scout read. */
  comments?: { login: string; body: string; url: string }[];
};

/** What the scout read: the pulls, newest first, and the checks a ruleset or branch protection requires. */
export type ScoutHistory = { pulls: ScoutedPull[]; requiredChecks: string[]; seen: string };

const share = 0.6;
const ccTitle = /^(feat|fix|chore|docs|refactor|test|ci|build|perf|style|revert)(\([^)]{1,40}\))?!?: \S/;
const claName = /(^|[^a-z])(cla|easycla|license\/cla|cla-assistant|contributor license)([^a-z]|$)/i;
const dcoName = /(^|[^a-z])dco([^a-z]|$)/i;
/** "more than 10 open PRs", "over 5 active pull requests", "a limit of 3 open PRs". */
const limitSaid =
  /\b(?:more than|over|exceeds?|at most|maximum of|max(?:imum)?|limit(?: of)?)\s+(\d{1,4})\s+(?:open|active|opened)\s+(?:PRs?|pull requests?)\b/i;

/**
 * Short, sourced rules from a repository's recent pull requests. Each rule is computed from counts
 * and checked shapes; text from the history is only ever evidence (quoted), so a comment saying
 * "ignore previous instructions" makes no rule and changes none.
 */
export function learnRules(history: ScoutHistory): SourcedRule[] {
  const { pulls, seen } = history;
  return [
    ...branchRule(pulls, seen),
    ...titleRule(pulls, seen),
    ...checkRules(history),
    ...limitRules(pulls, seen),
    ...closingNotes(pulls, seen),
  ];
}

const evidenceOf = (pulls: readonly ScoutedPull[], quote?: string) => ({
  pulls: pulls.slice(0, 20).map((p) => p.number),
  links: pulls.slice(0, 5).map((p) => p.url),
  ...(quote !== undefined && { quote: quote.replace(/\s+/g, ' ').trim().slice(0, 500) }),
});

function branchRule(pulls: readonly ScoutedPull[], seen: string): SourcedRule[] {
  const merged = pulls.filter((p) => p.merged);
  const byPrefix = new Map<string, ScoutedPull[]>();
  for (const p of merged) {
    const prefix = /^([a-z0-9][a-z0-9._-]{0,30}\/)/i.exec(p.head)?.[1]?.toLowerCase();
    if (prefix) byPrefix.set(prefix, [...(byPrefix.get(prefix) ?? []), p]);
  }
  const [prefix, shown] = [...byPrefix].sort((a, b) => b[1].length - a[1].length)[0] ?? [];
  if (!prefix || !shown || shown.length < 3 || shown.length < merged.length * share) return [];
  const rule = ScoutRule.safeParse({ kind: 'branch-prefix', prefix, count: shown.length, of: merged.length });
  if (!rule.success) return [];
  const text = `branches are named \`${prefix}…\` (${shown.length} of ${merged.length} merged)`;
  return [{ rule: rule.data, text, evidence: evidenceOf(shown), seen }];
}

function titleRule(pulls: readonly ScoutedPull[], seen: string): SourcedRule[] {
  const merged = pulls.filter((p) => p.merged);
  const shown = merged.filter((p) => ccTitle.test(p.title));
  if (shown.length < 3 || shown.length < merged.length * share) return [];
  const types = new Map<string, number>();
  for (const p of shown) {
    const type = ccTitle.exec(p.title)![1]!;
    types.set(type, (types.get(type) ?? 0) + 1);
  }
  const type = [...types].sort((a, b) => b[1] - a[1])[0]![0];
  const rule = ScoutRule.parse({ kind: 'conventional-title', type, count: shown.length, of: merged.length });
  const text = `titles follow Conventional Commits (\`type: summary\`; ${shown.length} of ${merged.length} merged)`;
  return [{ rule, text, evidence: evidenceOf(shown), seen }];
}

function checkRules(history: ScoutHistory): SourcedRule[] {
  const sampled = history.pulls.filter((p) => p.checks !== undefined);
  const names = new Map<string, { pulls: ScoutedPull[]; url?: string }>();
  for (const p of sampled)
    for (const check of p.checks!) {
      const entry = names.get(check.name) ?? { pulls: [] };
      if (!entry.pulls.includes(p)) entry.pulls.push(p);
      if (check.url) entry.url ??= check.url;
      names.set(check.name, entry);
    }
  for (const name of history.requiredChecks) if (!names.has(name)) names.set(name, { pulls: [] });
  const rules: SourcedRule[] = [];
  for (const [name, { pulls, url }] of names) {
    const required = history.requiredChecks.includes(name);
    if (!required && (pulls.length < 3 || pulls.length < sampled.length * 0.8)) continue;
    const cla = claName.test(name);
    const signOff = dcoName.test(name);
    const parsed = ScoutRule.safeParse({
      kind: 'check',
      name,
      cla,
      signOff,
      required,
      count: pulls.length,
      of: sampled.length,
    });
    if (!parsed.success) continue;
    const what = cla ? 'a CLA check' : signOff ? 'a DCO sign-off check' : 'a check';
    const where = required
      ? 'is required on the default branch'
      : `runs on pull requests (${pulls.length} of ${sampled.length} sampled)`;
    const evidence = evidenceOf(pulls);
    if (url) evidence.links = [url, ...evidence.links].slice(0, 5);
    rules.push({ rule: parsed.data, text: `${what} \`${name}\` ${where}`, evidence, seen: history.seen });
  }
  return rules.slice(0, 10);
}

function limitRules(pulls: readonly ScoutedPull[], seen: string): SourcedRule[] {
  const said = pulls.flatMap((p) =>
    (p.comments ?? []).flatMap((c) => {
      const m = limitSaid.exec(c.body);
      return m ? [{ pull: p, comment: c, limit: Number(m[1]) }] : [];
    }),
  );
  if (said.length === 0) return [];
  // The smallest limit anyone stated: staying under it stays under the others.
  const limit = Math.min(...said.map((s) => s.limit));
  const parsed = ScoutRule.safeParse({ kind: 'open-pr-limit', limit });
  if (!parsed.success) return [];
  const first = said.find((s) => s.limit === limit)!;
  const by = [...new Set(said.map((s) => `@${s.comment.login}`))].join(', ');
  return [
    {
      rule: parsed.data,
      text: `${by} closes pull requests from authors with more than ${limit} open (${said.length} closed so)`,
      evidence: {
        ...evidenceOf(
          said.map((s) => s.pull),
          first.comment.body,
        ),
        links: [first.comment.url, ...said.map((s) => s.pull.url)].slice(0, 5),
      },
      seen,
    },
  ];
}

/** The last bot or maintainer word on each closed-unmerged PR that no rule explains: quoted, at most five. */
function closingNotes(pulls: readonly ScoutedPull[], seen: string): SourcedRule[] {
  return pulls
    .filter((p) => !p.merged && (p.comments?.length ?? 0) > 0)
    .flatMap((p) => {
      const last = p.comments!.at(-1)!;
      if (limitSaid.test(last.body)) return [];
      const login = last.login.slice(0, 100);
      return [
        {
          rule: { kind: 'closing-note' as const, by: login },
          text: `#${p.number} was closed unmerged; @${login} said (quoted)`,
          evidence: {
            pulls: [p.number],
            links: [last.url],
            quote: last.body.replace(/\s+/g, ' ').trim().slice(0, 500),
          },
          seen,
        },
      ];
    })
    .slice(0, 5);
}
