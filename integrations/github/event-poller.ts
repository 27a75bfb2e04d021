import { type Repeating, repeatEvery } from './repeat-every.ts';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { DeliveryInbox } from '../../src/core/delivery-interpreter.ts';
import { ConditionalGet } from './conditional-get.ts';
import type { BotIdentity, GitHubClient, PatchbayOctokit } from './github-client.ts';
import type { PollMarks } from './poll-marks.ts';
import {
  checkSuiteEvent,
  installationEvent,
  issueCommentEvent,
  newMentions,
  numberOf,
  PolledComment,
  PolledPull,
  PolledRepo,
  PolledSuite,
  reviewCommentEvent,
  type PolledEvent,
} from './polled-events.ts';
import { githubDedupeKey, githubOrderKey } from './webhook-keys.ts';

type PollerDeps = {
  client: Pick<GitHubClient, 'app' | 'forInstallation' | 'identity'>;
  marks: Pick<PollMarks, 'get' | 'save'>;
  inbox: DeliveryInbox;
  log: Logger;
  /** Between looks. */
  intervalMs: number;
  /** How far back the first look at a list ever goes. */
  firstLookbackMs: number;
};

const Installations = z.array(z.looseObject({ id: z.number(), account: z.unknown() }));
const InstallationRepos = z.looseObject({ repositories: z.array(PolledRepo) });
const perPage = 100;

/** One repository of one installation, as a look goes through it. */
type Place = { octokit: PatchbayOctokit; repository: PolledRepo; installationId: number; bot: BotIdentity };

/**
 * GitHub's events for a host that webhooks cannot reach (GITHUB_EVENTS=polling). Every
 * `intervalMs` it asks GitHub's REST API, with conditional requests, for what the webhooks would
 * have brought on every repository the App is installed on: the installations and their
 * repositories (as `installation` events, for what other surfaces offer), new comments that mention the App in
 * issue and pull request conversations and on diffs, and finished check suites on the heads of the
 * App's own open pull requests. Each becomes the webhook body it would have been and goes into the
 * same inbound pipeline, so the webhook's dedupe key takes it once across looks and processes, and
 * the same interpreter checks who asked and what it means.
 */
export class GitHubEventPoller {
  readonly #deps: PollerDeps;
  readonly #get = new ConditionalGet();
  #repeating: Repeating | undefined;
  readonly #stopped = new AbortController();

  constructor(deps: PollerDeps) {
    this.#deps = deps;
  }

  /** Conditional answers so far: full ones, and 304s that cost no rate limit. */
  get requests(): { full: number; notModified: number } {
    return { ...this.#get.counts };
  }

  start(): void {
    this.#repeating = repeatEvery(
      this.#deps.intervalMs,
      () => this.poll(),
      (error) => {
        if (!this.#stopped.signal.aborted) this.#deps.log.warn({ err: error }, 'could not poll GitHub for events');
      },
    );
  }

  async stop(): Promise<void> {
    this.#stopped.abort();
    await this.#repeating?.stop();
  }

  /** One look at every installation's repositories. A repository that fails is logged and left to the next look. */
  async poll(): Promise<void> {
    const signal = this.#stopped.signal;
    const bot = await this.#deps.client.identity();
    const installations = Installations.parse(
      await this.#get.get(
        this.#deps.client.app.octokit as PatchbayOctokit,
        'GET /app/installations',
        { per_page: perPage },
        signal,
      ),
    );
    for (const installation of installations) {
      const octokit = await this.#deps.client.forInstallation(installation.id);
      const { repositories } = InstallationRepos.parse(
        await this.#get.get(octokit, 'GET /installation/repositories', { per_page: perPage }, signal),
      );
      await this.#accept(installationEvent(installation, repositories));
      for (const repository of repositories) {
        if (signal.aborted) return;
        const place = { octokit, repository, installationId: installation.id, bot };
        await this.#pollRepo(place).catch((error: unknown) => {
          if (!signal.aborted)
            this.#deps.log.warn({ err: error, repo: repository.full_name }, 'could not poll a repository for events');
        });
      }
    }
  }

  async #pollRepo(place: Place): Promise<void> {
    await this.#pollComments(place, 'issue-comments');
    await this.#pollComments(place, 'review-comments');
    await this.#pollOwnPulls(place);
  }

  /** New mentions among a repository's issue comments or review comments since the list's mark. */
  async #pollComments(place: Place, list: 'issue-comments' | 'review-comments'): Promise<void> {
    const { owner, name } = { owner: place.repository.owner.login, name: place.repository.name };
    const markKey = `${list}:${place.repository.full_name.toLowerCase()}`;
    const since = (await this.#deps.marks.get(markKey)) ?? new Date(Date.now() - this.#deps.firstLookbackMs);
    const route =
      list === 'issue-comments'
        ? 'GET /repos/{owner}/{repo}/issues/comments'
        : 'GET /repos/{owner}/{repo}/pulls/comments';
    const comments = z
      .array(PolledComment)
      .parse(
        await this.#get.get(
          place.octokit,
          route,
          { owner, repo: name, since: since.toISOString(), sort: 'updated', direction: 'asc', per_page: perPage },
          this.#stopped.signal,
        ),
      );
    const found = newMentions(comments, since, place.bot);
    for (const comment of found.mentions) await this.#accept(await this.#commentEvent(place, list, comment));
    if (found.nextSince > since) await this.#deps.marks.save(markKey, found.nextSince);
  }

  /** The webhook a new comment would have been: with its issue, or the pull request its diff belongs to. */
  async #commentEvent(
    place: Place,
    list: 'issue-comments' | 'review-comments',
    comment: PolledComment,
  ): Promise<PolledEvent> {
    const params = { owner: place.repository.owner.login, repo: place.repository.name };
    const request = { signal: this.#stopped.signal };
    if (list === 'issue-comments') {
      const issue_number = numberOf(comment.issue_url);
      const { data } = await place.octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}', {
        ...params,
        issue_number: issue_number ?? 0,
        request,
      });
      return issueCommentEvent(place, comment, data);
    }
    const pull_number = numberOf(comment.pull_request_url);
    const { data } = await place.octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
      ...params,
      pull_number: pull_number ?? 0,
      request,
    });
    return reviewCommentEvent(place, comment, data);
  }

  /** Finished check suites on the heads of the App's own open pull requests (what CI follow-ups read). */
  async #pollOwnPulls(place: Place): Promise<void> {
    const params = { owner: place.repository.owner.login, repo: place.repository.name };
    const pulls = z
      .array(PolledPull)
      .parse(
        await this.#get.get(
          place.octokit,
          'GET /repos/{owner}/{repo}/pulls',
          { ...params, state: 'open', per_page: perPage },
          this.#stopped.signal,
        ),
      );
    const ours = pulls.filter((p) => p.user?.login.toLowerCase() === place.bot.login.toLowerCase());
    for (const pull of ours) {
      const { check_suites } = z
        .looseObject({ check_suites: z.array(PolledSuite) })
        .parse(
          await this.#get.get(
            place.octokit,
            'GET /repos/{owner}/{repo}/commits/{ref}/check-suites',
            { ...params, ref: pull.head.sha, per_page: perPage },
            this.#stopped.signal,
          ),
        );
      for (const suite of check_suites) {
        const event = checkSuiteEvent(place, suite, pull);
        if (event) await this.#accept(event);
      }
    }
  }

  /** Into the inbound pipeline, keyed as the webhook would be: a second look or process finds it a duplicate. */
  async #accept(polled: PolledEvent): Promise<void> {
    const body = JSON.stringify(polled.payload);
    const orderKey = githubOrderKey(polled.event, polled.payload);
    const stored = await this.#deps.inbox.accept({
      source: 'github',
      dedupeKey: githubDedupeKey(body, polled.payload),
      deliveryId: `poll-${polled.id}`,
      kind: polled.event,
      body,
      ...(orderKey && { orderKey }),
    });
    if (stored === 'accepted')
      this.#deps.log.info({ event: polled.event, id: polled.id }, 'GitHub event found by polling');
  }
}
