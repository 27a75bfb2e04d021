import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { git, createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import type { Actor } from '../../src/core/actor.ts';
import { changelogModel, changelogRequester, expectChangelogPushed } from './changelog-scenario.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };
const bob: Actor = { source: 'slack', id: 'U2', name: 'Bob Roe', email: 'bob@example.com' };

/** A model whose next turn is decided by the test, from the transcript so far. */
function modelFrom(decide: (messages: readonly ModelMessage[]) => ScriptedTurn) {
  return createScriptedProvider({ scenario: decide });
}

const toolResults = (messages: readonly ModelMessage[]) => messages.filter((m) => m.role === 'tool');
const assistantTurns = (messages: readonly ModelMessage[]) => messages.filter((m) => m.role === 'assistant').length;

describe('a session end to end (queue, worker, harness, runner, real sandbox and git)', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture | undefined;

  beforeAll(async () => {
    remote = await createRemote();
  });
  afterEach(async () => {
    await app?.dispose();
    app = undefined;
  });
  afterAll(() => remote.cleanup());

  it('writes, checks and commits on a session branch pushed to the remote, with the requester as author', async () => {
    // The same scenario runs on Modal in test/sandbox/modal/modal-session.test.ts.
    const model = changelogModel();
    app = await startTestPatchbay({ model });
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: changelogRequester,
      text: 'Add a changelog',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const session = await waitForStatus(app, started.session.id, ['completed', 'failed']);
    await expectChangelogPushed(app, remote, session, model);
  });

  it('asks a question, waits, and resumes with the answer as the tool result', async () => {
    const model = modelFrom((messages) => {
      const turn = assistantTurns(messages);
      if (turn === 0)
        return {
          toolCalls: [
            {
              name: 'ask_user',
              input: { question: 'Tabs or spaces?', choices: ['tabs', 'spaces'], recommended: 'spaces' },
            },
          ],
        };
      const answer = toolResults(messages).at(-1);
      return { text: `Using ${answer?.role === 'tool' && answer.content.includes('spaces') ? 'spaces' : 'unknown'}.` };
    });
    app = await startTestPatchbay({ model });
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Format the code',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const waiting = await waitForStatus(app, started.session.id, ['waiting', 'failed', 'completed']);
    expect(waiting.status).toBe('waiting');
    expect(waiting.pendingQuestion).toMatchObject({
      question: 'Tabs or spaces?',
      choices: ['tabs', 'spaces'],
      recommended: 'spaces',
    });

    await app.service.sendMessage(started.session.id, bob, 'spaces please', waiting.pendingQuestion!.questionId);
    const done = await waitForStatus(app, started.session.id, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.result?.summary).toBe('Using spaces.');
    expect(done.pendingQuestion).toBeNull();
    const answered = (await app.store.events(done.id, { types: ['question-answered'] })).map((e) => e.event);
    expect(answered).toEqual([
      { type: 'question-answered', questionId: waiting.pendingQuestion!.questionId, actor: bob, text: 'spaces please' },
    ]);
    const answerResult = toolResults(model.requests.at(-1)!.messages).at(-1);
    expect(answerResult).toMatchObject({ role: 'tool', name: 'ask_user', isError: false });
    expect(answerResult?.role === 'tool' && answerResult.content).toContain(
      'Message from Bob Roe <bob@example.com> via slack',
    );
  });

  it('injects a message sent mid-run before the next model turn, with its author', async () => {
    const model = modelFrom((messages) => {
      const turn = assistantTurns(messages);
      if (turn === 0) return { toolCalls: [{ name: 'run_shell', input: { command: 'sleep 1' } }] };
      if (turn === 1) return { text: 'noted', toolCalls: [] };
      return { text: 'done' };
    });
    app = await startTestPatchbay({ model });
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Do a slow thing',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    await waitFor(
      async () => (await app!.store.events(id, { types: ['tool-start'] })).length > 0,
      'the shell call to start',
    );
    await app.service.sendMessage(id, bob, 'also update the docs');
    const done = await waitForStatus(app, id, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const second = model.requests[1]!.messages;
    const injected = second.at(-1);
    expect(second.at(-2)).toMatchObject({ role: 'tool', name: 'run_shell' });
    expect(injected?.role).toBe('user');
    expect(injected?.role === 'user' && injected.content).toMatch(
      /^Message from Bob Roe <bob@example.com> via slack at .+:\n> also update the docs$/,
    );
  });

  it('stops a running session: the command is killed and the session ends cancelled', async () => {
    const model = modelFrom((messages) =>
      assistantTurns(messages) === 0
        ? { toolCalls: [{ name: 'run_shell', input: { command: 'sleep 60', timeout_seconds: 120 } }] }
        : { text: 'should not get here' },
    );
    app = await startTestPatchbay({ model });
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Wait a minute',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    await waitFor(
      async () => (await app!.store.events(id, { types: ['tool-start'] })).length > 0,
      'the shell call to start',
    );
    const before = Date.now();
    expect((await app.service.stop(id, bob)).kind).toBe('stopped');
    const done = await waitForStatus(app, id, ['cancelled', 'completed', 'failed'], 10_000);
    expect(done.status).toBe('cancelled');
    await waitFor(
      async () => (await app!.store.events(id, { types: ['tool-end'] })).length > 0,
      'the shell call to end',
      10_000,
    );
    expect(Date.now() - before).toBeLessThan(10_000);
    expect(model.requests).toHaveLength(1);
    const changes = (await app.store.events(id, { types: ['status-changed'] })).map((e) => e.event);
    expect(changes.at(-1)).toMatchObject({ to: 'cancelled', reason: 'stopped by Bob Roe' });
  });

  it('shows a refused command to the model as an error result, and ends a repeating failure with a reason', async () => {
    const model = modelFrom(() => ({
      // A plain push stays refused at every autonomy (a force push is held for approval under ask-risky).
      toolCalls: [{ name: 'run_shell', input: { command: 'git push origin main' } }],
    }));
    app = await startTestPatchbay({ model });
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Push it',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const done = await waitForStatus(app, started.session.id, ['completed', 'failed']);
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/repeated the same failing run_shell call 3 times/);
    const refused = toolResults(model.requests[1]!.messages)[0];
    expect(refused).toMatchObject({ role: 'tool', isError: true });
    // The policy's own reason, not git's failure text: the command never ran.
    expect(refused?.role === 'tool' && refused.content).toContain('git push is not available to the agent');
    const errors = (await app.store.events(done.id, { types: ['error'] })).map((e) => e.event);
    expect(errors).toEqual([{ type: 'error', code: 'loop_guard', message: done.error }]);
    expect(await remote.remoteBranch(done.branch!)).toBe('');
  });

  it('ends a run at its tool-call limit with a clear reason', async () => {
    let n = 0;
    const model = modelFrom(() => ({ toolCalls: [{ name: 'run_shell', input: { command: `echo ${n++}` } }] }));
    app = await startTestPatchbay({ model, env: { RUN_MAX_TOOL_CALLS: '3' } });
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Loop forever',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const done = await waitForStatus(app, started.session.id, ['completed', 'failed']);
    expect(done.status).toBe('failed');
    expect(done.error).toBe('the run made 3 tool calls, its limit');
  });

  it('gives two sessions on the same repo separate checkouts', async () => {
    const model = modelFrom((messages) => {
      const first = messages[0];
      const mine = first?.role === 'user' && first.content.includes('one') ? 'one.txt' : 'two.txt';
      const theirs = mine === 'one.txt' ? 'two.txt' : 'one.txt';
      const turn = assistantTurns(messages);
      if (turn === 0)
        return { toolCalls: [{ name: 'write_file', input: { path: mine, content: mine } }], delayMs: 300 };
      if (turn === 1)
        return { toolCalls: [{ name: 'run_shell', input: { command: `sleep 0.5; ls; test ! -e ${theirs}` } }] };
      const shell = toolResults(messages).at(-1);
      return { text: shell?.role === 'tool' && !shell.isError ? 'isolated' : 'LEAK' };
    });
    app = await startTestPatchbay({ model });
    const a = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'write one',
      repo: remote.remote,
    });
    const b = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'write two',
      repo: remote.remote,
    });
    if (a.kind !== 'started' || b.kind !== 'started') throw new Error('not started');
    const [doneA, doneB] = await Promise.all([
      waitForStatus(app, a.session.id, ['completed', 'failed']),
      waitForStatus(app, b.session.id, ['completed', 'failed']),
    ]);
    expect([doneA.result?.summary, doneB.result?.summary]).toEqual(['isolated', 'isolated']);
    expect(doneA.branch).not.toBe(doneB.branch);
    expect(await git(remote.remote, 'ls-tree', '--name-only', doneA.result!.commit!)).not.toContain('two.txt');
    expect(await git(remote.remote, 'ls-tree', '--name-only', doneB.result!.commit!)).not.toContain('one.txt');
  });
});
