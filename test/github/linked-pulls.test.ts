import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGitHubClient } from '../../integrations/github/github-client.ts';
import { createPublisher } from '../../integrations/github/github-publish.ts';
import type { GitHubStore } from '../../integrations/github/github-store.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import type { FamilyMember } from '../../src/core/session-family.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';

const log = pino({ level: 'silent' });
// The publisher reads installations through the store only as a cache; the fake's API answers.
const noStoredInstallations = { installationFor: async () => undefined } as unknown as GitHubStore;

function session(id: string, repo: string, title: string, parentId: string | null = null): SessionRecord {
  const at = new Date().toISOString();
  return {
    id,
    createdAt: at,
    updatedAt: at,
    status: 'running',
    repo,
    prompt: title,
    title,
    requester: { source: 'slack', id: 'U1', name: 'Ada' },
    baseBranch: 'main',
    branch: `patchbay/${id}`,
    lastSeq: 0,
    pendingQuestion: null,
    result: null,
    error: null,
    usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
    parentId,
  };
}

describe('pull requests of one session family link each other (fake GitHub, real Octokit)', () => {
  let fake: FakeGitHub;
  let api: RemoteFixture;
  let client: RemoteFixture;
  beforeAll(async () => {
    fake = await startFakeGitHub();
    api = await createRemote();
    client = await createRemote();
    await api.pushCommit('api.ts', 'export const v = 2;\n', 'API v2', 'patchbay/parent');
    await client.pushCommit('client.ts', 'use v2\n', 'Client for v2', 'patchbay/child');
    await fake.addRepo('acme', 'api', api.remote, 5);
    await fake.addRepo('acme', 'client', client.remote, 5);
  });
  afterAll(async () => {
    await fake.close();
    await api.cleanup();
    await client.cleanup();
  });

  it('links both bodies once both exist, keeps the rest of each body, and does not repeat the section', async () => {
    const parent = session('parent', `${fake.gitUrl}/acme/api`, 'Version the API');
    const child = session('child', `${fake.gitUrl}/acme/client`, 'Move the client to v2', 'parent');
    const members: FamilyMember[] = [
      { sessionId: parent.id, repo: parent.repo },
      { sessionId: child.id, repo: child.repo },
    ];
    const publisher = createPublisher({
      client: createGitHubClient({
        appId: String(fake.appId),
        privateKey: fake.privateKey,
        apiUrl: fake.apiUrl,
        gitUrl: fake.gitUrl,
        store: noStoredInstallations,
        log,
      }),
      store: noStoredInstallations,
      context: {
        publicUrl: 'http://patchbay.test',
        sessions: { events: async () => [], threads: async () => [], addThread: async () => true },
        outcomes: { opened: async () => undefined },
      },
      gitUrl: fake.gitUrl,
      draft: false,
      log,
      family: { family: async () => members.map((m) => ({ ...m })) },
    });
    const run = (s: SessionRecord, summary: string) =>
      publisher.publish({
        session: s,
        branch: s.branch!,
        baseBranch: 'main',
        commit: '0'.repeat(40),
        summary,
        signal: AbortSignal.timeout(30_000),
      });
    const bodyOf = (url: string) => fake.pulls.find((p) => url.endsWith(`/${p.repo}/pull/${p.number}`))!.body;

    // The child on the other repository opens first: nothing to link yet.
    const childPr = (await run(child, 'The client speaks v2.'))!;
    members[1]!.prUrl = childPr.url;
    expect(bodyOf(childPr.url)).not.toContain('patchbay:family');

    // The parent opens last: its body links the child's, and the child's is updated to link it.
    const parentPr = (await run(parent, 'The API is versioned.'))!;
    members[0]!.prUrl = parentPr.url;
    const childLabel = `acme/client#${childPr.number}`;
    const parentLabel = `acme/api#${parentPr.number}`;
    expect(bodyOf(parentPr.url)).toMatch(
      new RegExp(
        `^<!-- patchbay:family -->\\n\\*\\*Part of one change across repositories\\*\\*, with \\[${childLabel}\\]\\(${childPr.url}\\)\\.\\n<!-- /patchbay:family -->\\n\\n## Summary\\n\\nThe API is versioned\\.`,
      ),
    );
    const childBody = bodyOf(childPr.url);
    expect(childBody).toContain(`with [${parentLabel}](${parentPr.url}).`);
    expect(childBody).toContain('## Summary\n\nThe client speaks v2.');
    expect(childBody).toContain('<!-- patchbay:session=child -->');

    // Publishing both again (follow-up runs) keeps one section each, and leaves a linked body alone.
    const patchesBefore = fake.calls.filter((c) => c.operationId === 'pulls/update').length;
    await run(parent, 'The API is versioned.');
    const afterParent = fake.calls.filter((c) => c.operationId === 'pulls/update').length;
    expect(afterParent - patchesBefore).toBe(1); // the parent's own description, rewritten as every run does
    await run(child, 'The client speaks v2.');
    for (const url of [parentPr.url, childPr.url]) {
      const body = bodyOf(url);
      expect(body.split('<!-- patchbay:family -->')).toHaveLength(2);
      expect(body.split('Part of one change across repositories')).toHaveLength(2);
    }
    expect(bodyOf(childPr.url)).toContain(`with [${parentLabel}](${parentPr.url}).`);
    expect(bodyOf(parentPr.url)).toContain(`with [${childLabel}](${childPr.url}).`);
    expect(fake.pulls).toHaveLength(2);
    expect(fake.refused).toEqual([]);
  });
});
