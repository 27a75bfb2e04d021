import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { createChaos } from './chaos.ts';
import { slowAnswerMs } from './chaos-faults.ts';
import { startFakeAnthropic } from './fake-anthropic.ts';
import { type FakeGitHub, startFakeGitHub } from './fake-github.ts';
import { startFakeOpenAI } from './fake-openai.ts';
import { DEFAULT_CHANNELS, startFakeSlackApi } from './fake-slack-api.ts';
import { startFakeLinear } from './linear/fake-linear.ts';
import { appJwt } from './github-app-jwt.ts';
import { type ScriptedChaos, scriptedChaos } from './scripted-chaos.ts';

const run = promisify(execFile);

describe('chaos for the fakes', () => {
  it('decides each request from the seed, the service, the operation and its count', () => {
    const kinds = ['rate-limited', 'overloaded'] as const;
    const faults = (seed: number, operations: string[]) => {
      const chaos = createChaos({ rate: 0.5, seed });
      return operations.map((op) => chaos.roll('anthropic', op, kinds) ?? '-');
    };
    const calls = Array.from({ length: 40 }, () => 'messages');
    expect(faults(7, calls)).toEqual(faults(7, calls));
    expect(faults(7, calls)).not.toEqual(faults(8, calls));
    // Another operation's requests in between change nothing for this one.
    const mixed = calls.flatMap((op) => [op, 'other']);
    expect(faults(7, mixed).filter((_, i) => i % 2 === 0)).toEqual(faults(7, calls));
    const picked = faults(7, calls).filter((f) => f !== '-');
    expect(picked.length).toBeGreaterThan(10);
    expect(picked.length).toBeLessThan(30);
    const none = createChaos({ rate: 0, seed: 7 });
    expect(calls.map((op) => none.roll('anthropic', op, kinds))).toEqual(calls.map(() => undefined));
    expect(none.injected).toEqual([]);
    expect(() => createChaos({ rate: 2, seed: 1 })).toThrow('chaos rate 2 is not within [0, 1]');
  });

  it("decides a subject's requests apart from every other subject's, and records the subject", () => {
    const kinds = ['rate-limited', 'overloaded'] as const;
    const faults = (subjects: string[]) => {
      const chaos = createChaos({ rate: 0.5, seed: 11 });
      const picked = subjects.map((subject) => chaos.roll('anthropic', 'messages', kinds, subject) ?? '-');
      return { picked, injected: chaos.injected };
    };
    const alone = Array.from({ length: 30 }, () => 'task-0');
    // Another session's requests in between, in any order, change nothing for task-0.
    const interleaved = alone.flatMap((s, i) => (i % 3 === 0 ? ['task-1', s, 'task-1'] : [s]));
    const ofTask0 = (run: ReturnType<typeof faults>, subjects: string[]) =>
      run.picked.filter((_, i) => subjects[i] === 'task-0');
    expect(ofTask0(faults(interleaved), interleaved)).toEqual(faults(alone).picked);
    expect(faults(alone).injected.every((f) => f.subject === 'task-0')).toBe(true);
    expect(faults(alone).injected.length).toBeGreaterThan(0);
  });

  it('Linear answers 429 or 503 with Retry-After, recorded as injected, not as refused', async () => {
    const chaos = createChaos({ rate: 1, seed: 3 });
    const linear = await startFakeLinear({ chaos });
    try {
      const res = await fetch(linear.apiUrl, {
        method: 'POST',
        headers: { authorization: `Bearer ${linear.accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'query Me { viewer { id } }' }),
      });
      expect([429, 503]).toContain(res.status);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(chaos.injected).toEqual([
        { service: 'linear', operation: 'Me', kind: res.status === 429 ? 'rate-limited' : 'unavailable' },
      ]);
      expect(linear.operations).toEqual([]);
      expect(linear.refused).toEqual([]);
    } finally {
      await linear.close();
    }
  });

  it('OpenAI answers a fault of the service in place of the scripted answer', async () => {
    const chaos = createChaos({ rate: 1, seed: 6 });
    const openai = await startFakeOpenAI({ chat: () => ({ text: 'Hello there, how are you?' }), chaos });
    try {
      const res = await fetch(`${openai.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer test-openai-key', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-5', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      const text = await res.text();
      const [fault] = chaos.injected;
      expect(fault).toMatchObject({ service: 'openai', operation: 'chat' });
      const expected = {
        'rate-limited': () => expect(res.status).toBe(429),
        overloaded: () => expect(res.status).toBe(503),
        'stream-cut': () => expect(text).not.toContain('[DONE]'),
        'error-event': () => expect(text).toContain('"error"'),
      }[fault!.kind as 'rate-limited'];
      expected();
      expect(text).not.toContain('finish_reason":"stop"');
      expect(openai.rejections).toEqual([]);
    } finally {
      await openai.close();
    }
  });
});

describe('the network faults every chaotic fake has (slow answers, connections dropped before any answer)', () => {
  it('holds a slow answer 1 to 2 s, the same delays for the same seed', () => {
    const delays = (seed: number) => {
      const chaos = createChaos({ rate: 1, seed });
      return Array.from({ length: 12 }, () => {
        chaos.roll('slack', 'chat.postMessage', ['slow']);
        return slowAnswerMs(chaos, 'slack', 'chat.postMessage');
      });
    };
    expect(delays(4)).toEqual(delays(4));
    expect(delays(4)).not.toEqual(delays(5));
    for (const ms of delays(4)) expect(ms >= 1000 && ms < 2000).toBe(true);
    expect(new Set(delays(4)).size).toBeGreaterThan(1);
  });

  it('Slack: a post whose connection drops before any answer is not posted; a slow one is', async () => {
    const chaos = scriptedChaos({ 'slack chat.postMessage (network)': ['dropped', 'slow'] });
    const slack = await startFakeSlackApi({ botToken: 'xoxb-chaos', chaos });
    try {
      const post = () =>
        fetch(`${slack.apiUrl}chat.postMessage`, {
          method: 'POST',
          headers: { authorization: 'Bearer xoxb-chaos', 'content-type': 'application/json' },
          body: JSON.stringify({ channel: DEFAULT_CHANNELS[0], text: 'hello' }),
        });
      await expect(post()).rejects.toThrow('fetch failed');
      expect(slack.messages).toEqual([]);
      const slow = await post();
      expect(await slow.json()).toMatchObject({ ok: true });
      expect(slack.messages.map((m) => m.text)).toEqual(['hello']);
      expect(chaos.injected.map((f) => f.kind)).toEqual(['dropped', 'slow']);
      expect(slack.refused).toEqual([]);
    } finally {
      await slack.close();
    }
  });

  it('Anthropic: a request dropped before any answer; a slow one answered whole', async () => {
    const chaos = scriptedChaos({ 'anthropic messages (network)': ['dropped', 'slow'] });
    const anthropic = await startFakeAnthropic({ script: () => ({ content: [{ type: 'text', text: 'Hi.' }] }), chaos });
    try {
      const ask = () =>
        fetch(`${anthropic.baseUrl}/v1/messages`, {
          method: 'POST',
          headers: { 'x-api-key': 'test-anthropic-key', 'anthropic-version': '2023-06-01' },
          body: JSON.stringify({
            model: 'claude-sonnet-4-6',
            max_tokens: 100,
            messages: [{ role: 'user', content: 'hi' }],
          }),
        });
      await expect(ask()).rejects.toThrow('fetch failed');
      expect(await (await ask()).json()).toMatchObject({ content: [{ type: 'text', text: 'Hi.' }] });
      expect(anthropic.rejections).toEqual([]);
    } finally {
      await anthropic.close();
    }
  });

  it('Linear: its token endpoint busy (429 with Retry-After) or dropped redeems nothing; the API drops too', async () => {
    const chaos = scriptedChaos({
      'linear oauth/token': ['rate-limited', 'dropped', 'unavailable'],
      'linear Me (network)': ['dropped'],
    });
    const linear = await startFakeLinear({ chaos });
    try {
      const { redirect } = linear.authorize(
        `https://linear.app/oauth/authorize?client_id=${linear.oauth.clientId}&actor=app&redirect_uri=http://patchbay.test/cb&scope=read`,
      );
      const code = new URL(redirect).searchParams.get('code')!;
      const exchange = () =>
        fetch(linear.apiUrl.replace('/graphql', '/oauth/token'), {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            code,
            redirect_uri: 'http://patchbay.test/cb',
            client_id: linear.oauth.clientId,
            client_secret: linear.oauth.clientSecret,
          }),
        });
      const busy = await exchange();
      expect([busy.status, busy.headers.get('retry-after')]).toEqual([429, '1']);
      await expect(exchange()).rejects.toThrow('fetch failed');
      expect((await exchange()).status).toBe(503);
      // Nothing was redeemed by the faults: the code still works.
      expect((await exchange()).status).toBe(200);
      expect(linear.grants.map((g) => g.grantType)).toEqual(['authorization_code']);
      const me = fetch(linear.apiUrl, {
        method: 'POST',
        headers: { authorization: `Bearer ${linear.accessToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'query Me { viewer { id } }' }),
      });
      await expect(me).rejects.toThrow('fetch failed');
      expect(linear.operations).toEqual([]);
      expect(linear.refused).toEqual([]);
    } finally {
      await linear.close();
    }
  });
});

describe('chaos on GitHub beyond REST: GraphQL, git over HTTP, installation tokens', () => {
  let github: FakeGitHub;
  let upstream: RemoteFixture;
  let chaos: ScriptedChaos;
  let work: string;

  beforeAll(async () => {
    chaos = scriptedChaos({});
    github = await startFakeGitHub({ chaos });
    upstream = await createRemote();
    await upstream.pushCommit('README.md', 'hello\n', 'first');
    await github.addRepo('octo-org', 'web', upstream.remote, 77);
    work = await mkdtemp(join(tmpdir(), 'chaos-git-'));
  });
  afterAll(async () => {
    await github.close();
    await upstream.cleanup();
    await rm(work, { recursive: true, force: true });
  });

  /** POST /app/installations/77/access_tokens, as the App. */
  const mintToken = () =>
    fetch(`${github.apiUrl}/app/installations/77/access_tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${appJwt(github)}`, accept: 'application/vnd.github+json' },
    });
  const token = async () => ((await (await mintToken()).json()) as { token: string }).token;
  const remoteUrl = async () => {
    const url = new URL(`${github.gitUrl}/octo-org/web.git`);
    [url.username, url.password] = ['x-access-token', await token()];
    return url.toString();
  };
  const gitIn = (cwd: string, ...args: string[]) =>
    run('git', args, { cwd, env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent', GIT_TERMINAL_PROMPT: '0' } });
  const hosted = (branch: string) =>
    run('git', ['--git-dir', github.repo('octo-org', 'web').gitDir, 'rev-parse', '--verify', '--quiet', branch]).then(
      (r) => r.stdout.trim(),
      () => '',
    );

  it('the installation-token endpoint: a secondary limit, or dropped before minting anything', async () => {
    chaos.script({
      'github apps/create-installation-access-token': ['secondary-limit-429'],
      'github apps/create-installation-access-token (network)': ['dropped'],
    });
    const limited = await mintToken();
    expect([limited.status, limited.headers.get('retry-after')]).toEqual([429, '1']);
    expect(((await limited.json()) as { message: string }).message).toContain('secondary rate limit');
    const issued = github.issuedTokens.length;
    await expect(mintToken()).rejects.toThrow('fetch failed');
    expect(github.issuedTokens.length).toBe(issued);
    expect((await mintToken()).status).toBe(201);
  });

  it('GraphQL: 502, a secondary limit, or a connection dropped before any answer, the mutation not done', async () => {
    const pull = github.addPull('octo-org', 'web', { head: 'main', base: 'main', title: 't', user: github.bot });
    pull.draft = true;
    chaos.script({ 'github graphql': ['bad-gateway', 'secondary-limit-403', 'dropped'] });
    const ready = async () =>
      fetch(`${github.apiUrl.replace('/api/v3', '')}/api/graphql`, {
        method: 'POST',
        headers: { authorization: `token ${await token()}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          query: `mutation { markPullRequestReadyForReview(input: { pullRequestId: "PR_kw${pull.number}" }) { pullRequest { isDraft } } }`,
        }),
      });
    expect((await ready()).status).toBe(502);
    const limited = await ready();
    expect([limited.status, limited.headers.get('retry-after')]).toEqual([403, '1']);
    await expect(ready()).rejects.toThrow('fetch failed');
    expect(pull.draft).toBe(true);
    expect(await (await ready()).json()).toEqual({
      data: { markPullRequestReadyForReview: { pullRequest: { isDraft: false } } },
    });
  });

  it('clone and fetch: a 502 or 500, or a dropped connection fails the git command; a slow one only waits', async () => {
    // curl sends a request again, once, when a connection it reused closes with no answer: two drops in a row fail.
    chaos.script({
      'github-git git-upload-pack info/refs': ['bad-gateway', '-', '-', 'slow'],
      'github-git git-upload-pack pack': ['dropped', 'dropped', 'server-error'],
    });
    const url = await remoteUrl();
    const clone = (dir: string) => gitIn(work, 'clone', '--quiet', url, dir);
    await expect(clone('a')).rejects.toThrow('The requested URL returned error: 502');
    await expect(clone('b')).rejects.toThrow('Empty reply from server');
    await expect(clone('c')).rejects.toThrow('The requested URL returned error: 500');
    await clone('d');
    expect((await gitIn(join(work, 'd'), 'log', '-1', '--format=%s')).stdout.trim()).toBe('first');
    expect(chaos.injected.filter((f) => f.service === 'github-git').map((f) => f.kind)).toEqual([
      'bad-gateway',
      'dropped',
      'dropped',
      'server-error',
      'slow',
    ]);
  });

  it('push: dropped before any answer leaves the ref as it was; dropped after the update has moved it', async () => {
    const dir = join(work, 'push');
    await gitIn(work, 'clone', '--quiet', await remoteUrl(), dir);
    await gitIn(dir, 'remote', 'set-url', 'origin', await remoteUrl());
    await gitIn(dir, '-c', 'user.name=T', '-c', 'user.email=t@example.com', 'commit', '--allow-empty', '-qm', 'work');
    const commit = (await gitIn(dir, 'rev-parse', 'HEAD')).stdout.trim();
    chaos.script({ 'github-git git-receive-pack pack': ['dropped', 'dropped', 'drop-after-update'] });
    const push = () => gitIn(dir, 'push', '--quiet', 'origin', 'HEAD:refs/heads/patchbay/chaos');
    await expect(push()).rejects.toThrow('Empty reply from server');
    expect(await hosted('patchbay/chaos')).toBe('');
    // The refs updated and the answer lost; curl sends the push again on its own, and that one is refused.
    await expect(push()).rejects.toThrow('cannot lock ref');
    expect(await hosted('patchbay/chaos')).toBe(commit);
    // Pushing again is harmless: the remote already has it.
    await push();
    expect(await hosted('patchbay/chaos')).toBe(commit);
    expect(github.refused).toEqual([]);
  });
});
