import { expect } from 'vitest';
import type { Patchbay } from '../../src/main.ts';
import type { FakeGitHub } from '../fakes/fake-github.ts';
import { waitFor, waitForStatus } from './wait-for.ts';

/**
 * What the engine end-to-end tests read of a session once it ran: the pull request it opened and
 * showed in its thread, the engine sessions its transcript resumes, the steps its page shows and the
 * usage the relay metered.
 */

/**
 * Waits for the session to end and expects it completed without error, its result naming the pull
 * request opened from its branch on `owner/repo`, and that link in the thread it came from.
 */
export async function expectPullRequestInThread(input: {
  app: Patchbay;
  github: FakeGitHub;
  sessionId: string;
  repo: string;
  threadText: () => string[];
  timeoutMs: number;
}) {
  const done = await waitForStatus(
    input.app,
    input.sessionId,
    ['completed', 'failed', 'cancelled', 'waiting'],
    input.timeoutMs,
  );
  expect(done.error).toBeNull();
  expect(done.status).toBe('completed');
  const pull = input.github.pulls.find((p) => p.head === done.branch)!;
  const link = `${input.github.gitUrl}/${input.repo}/pull/${pull.number}`;
  expect(done.result?.prUrl).toBe(link);
  await waitFor(async () => input.threadText().some((t) => t.includes(link)), 'the PR link in the thread', 60_000);
  return { done, pull, link };
}

/** The engine sessions the session's transcript resumes, one per assistant turn that carries one. */
export async function engineResumes(app: Patchbay, sessionId: string) {
  return (await app.store.transcript(sessionId)).flatMap((e) =>
    e.message.role === 'assistant' && e.message.providerState ? [e.message.providerState] : [],
  );
}

/** The tool steps the session's page shows, from its events as the API serves them. */
export async function pageToolSteps(app: Patchbay, sessionId: string) {
  const res = await fetch(`${app.url}/api/sessions/${sessionId}/events?format=json`);
  const page = (await res.json()) as { event: { type: string; name?: string; input?: unknown } }[];
  return page.filter((e) => e.event.type === 'tool-start').map((e) => e.event);
}

/** The usage events recorded under the session for `model` (the relay meters each engine call). */
export async function modelUsage(app: Patchbay, sessionId: string, model: string) {
  const usage = (await app.store.events(sessionId, { types: ['usage'] })).map((e) => e.event);
  return usage.filter((u) => u.type === 'usage' && u.model === model);
}
