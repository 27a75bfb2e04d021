import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };

const firstText = (messages: readonly ModelMessage[]) => {
  const first = messages[0];
  return first?.role === 'user' ? first.content : '';
};
const turns = (messages: readonly ModelMessage[]) => messages.filter((m) => m.role === 'assistant').length;
const lastTool = (messages: readonly ModelMessage[]) => messages.filter((m) => m.role === 'tool').at(-1);

/**
 * One model for the parent and its children, told apart by their tasks: the parent fans out
 * `tasks`, then ends with the spawn call's result as its final message; each child does what its
 * `children` entry says.
 */
function fanOutModel(
  tasks: { title: string; prompt: string; repo?: string }[],
  children: Record<string, (turn: number) => ScriptedTurn>,
) {
  return createScriptedProvider({
    scenario: (messages) => {
      const task = firstText(messages);
      const child = Object.keys(children).find((tag) => task.includes(tag));
      if (child) return children[child]!(turns(messages));
      if (turns(messages) === 0) return { toolCalls: [{ name: 'spawn_subtasks', input: { tasks } }] };
      const result = lastTool(messages);
      return { text: `PARENT GOT:\n${result?.role === 'tool' ? result.content : 'nothing'}` };
    },
  });
}

/** A child that writes one file in a shell call (slowly, so the children's runs overlap), then ends. */
const writes =
  (file: string, delayMs = 1500) =>
  (turn: number): ScriptedTurn =>
    turn === 0
      ? { toolCalls: [{ name: 'run_shell', input: { command: `sleep 1; printf 'a\\nb\\n' > ${file}` } }], delayMs }
      : { text: `Wrote ${file}.` };

/** A child whose command fails the same way every time: the loop guard fails it. */
const failing = (): ScriptedTurn => ({ toolCalls: [{ name: 'run_shell', input: { command: 'exit 3' } }] });

describe('fan-out: spawn_subtasks through the real composition (queue, worker, harness, sandboxes, git)', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture | undefined;

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit('README.md', 'hello\n', 'first commit');
  });
  afterEach(async () => {
    await app?.dispose();
    app = undefined;
  });
  afterAll(() => remote.cleanup());

  it('runs the children side by side on their own branches, then resumes the parent with how each went', {
    timeout: 180_000,
  }, async () => {
    const model = fanOutModel(
      [
        { title: 'First part', prompt: 'CHILD-ONE: write one.txt' },
        { title: 'Second part', prompt: 'CHILD-TWO: write two.txt' },
        { title: 'Third part', prompt: 'CHILD-BAD: this one fails' },
      ],
      { 'CHILD-ONE': writes('one.txt'), 'CHILD-TWO': writes('two.txt'), 'CHILD-BAD': failing },
    );
    app = await startTestPatchbay({ model, env: { WORKER_CONCURRENCY: '4' } });
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'PARENT',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const parentId = started.session.id;

    const waiting = await waitForStatus(app, parentId, ['waiting', 'failed', 'completed']);
    expect(waiting.status).toBe('waiting');
    const children = await app.store.children(parentId);
    expect(children.map((c) => [c.index, c.title, c.repo])).toEqual([
      [1, 'First part', remote.remote],
      [2, 'Second part', remote.remote],
      [3, 'Third part', remote.remote],
    ]);
    const parentBranch = waiting.branch!;
    expect(children.map((c) => c.branch)).toEqual([1, 2, 3].map((n) => `${parentBranch}-sub-${n}`));
    const spawned = (await app.store.events(parentId, { types: ['subtasks-spawned'] })).map((e) => e.event);
    expect(spawned).toEqual([
      expect.objectContaining({
        type: 'subtasks-spawned',
        children: children.map((c) => ({
          sessionId: c.sessionId,
          index: c.index,
          title: c.title,
          repo: c.repo,
          branch: c.branch,
        })),
      }),
    ]);
    for (const child of children) expect((await app.store.get(child.sessionId))?.parentId).toBe(parentId);

    const done = await waitForStatus(app, parentId, ['completed', 'failed'], 150_000);
    expect(done.status).toBe('completed');
    const ended = await app.store.children(parentId);
    expect(ended.map((c) => c.status)).toEqual(['completed', 'completed', 'failed']);

    // The children's runs overlapped: each started before another ended.
    const runs = await Promise.all(ended.map((c) => runSpan(app!, c.sessionId)));
    const [one, two] = runs;
    expect(one!.start < two!.end && two!.start < one!.end).toBe(true);

    // Each child on the parent's repository pushed its own branch and opened no pull request.
    for (const [i, child] of ended.slice(0, 2).entries()) {
      const file = i === 0 ? 'one.txt' : 'two.txt';
      expect(child.commit).toMatch(/^[0-9a-f]{40}$/);
      expect(await remote.remoteBranch(child.branch!)).toBe(child.commit);
      expect(await git(remote.remote, 'show', `${child.commit}:${file}`)).toBe('a\nb');
      expect(child.prUrl).toBeUndefined();
    }

    // The parent's pending call got every child's status, branch, commit, files and message, or its error.
    const summary = done.result?.summary ?? '';
    expect(summary).toContain(`Sub-task 1 "First part" (${remote.remote}): completed`);
    expect(summary).toContain(`branch: ${ended[0]!.branch}, commit ${ended[0]!.commit}`);
    expect(summary).toContain('changed files: one.txt (+2 -0)');
    expect(summary).toContain('final message: Wrote one.txt.');
    expect(summary).toContain('changed files: two.txt (+2 -0)');
    expect(summary).toContain(`Sub-task 3 "Third part" (${remote.remote}): failed`);
    expect(summary).toMatch(/Sub-task 3[\s\S]*error: the agent repeated the same failing run_shell call/);
    const endedEvents = (await app.store.events(parentId, { types: ['subtask-ended'] })).map((e) => e.event);
    expect(endedEvents).toHaveLength(3);
  });

  it('refuses too many tasks and a repository that is not one, with errors the model sees, and starts nothing', {
    timeout: 120_000,
  }, async () => {
    const tooMany = Array.from({ length: 3 }, (_, i) => ({ title: `t${i}`, prompt: `p${i}` }));
    const results: string[] = [];
    const model = createScriptedProvider({
      scenario: (messages) => {
        const turn = turns(messages);
        const result = lastTool(messages);
        if (result?.role === 'tool') results.push(result.content);
        if (turn === 0) return { toolCalls: [{ name: 'spawn_subtasks', input: { tasks: tooMany } }] };
        if (turn === 1)
          return {
            toolCalls: [
              {
                name: 'spawn_subtasks',
                input: { tasks: [{ title: 'x', prompt: 'y', repo: 'https://elsewhere.example/o/r' }] },
              },
            ],
          };
        return { text: 'Did it myself.' };
      },
    });
    app = await startTestPatchbay({ model, env: { SUBTASKS_MAX: '2' } });
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'PARENT',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const done = await waitForStatus(app, started.session.id, ['completed', 'failed'], 90_000);
    expect(done.status).toBe('completed');
    expect(results[0]).toContain('at most 2 sub-tasks per call (SUBTASKS_MAX)');
    expect(results[1]).toContain('Sub-task 1 names "https://elsewhere.example/o/r", which is not a repository URL');
    expect(await app.store.children(started.session.id)).toEqual([]);
  });

  it('a sub-task cannot fan out, its question is answered in the parent, and a stop on the parent stops the rest', {
    timeout: 180_000,
  }, async () => {
    const model = fanOutModel(
      [
        { title: 'Asker', prompt: 'CHILD-ASK: ask first' },
        { title: 'Sleeper', prompt: 'CHILD-SLOW: take long' },
      ],
      {
        'CHILD-ASK': (turn) =>
          turn === 0
            ? { toolCalls: [{ name: 'spawn_subtasks', input: { tasks: [{ title: 'deeper', prompt: 'no' }] } }] }
            : turn === 1
              ? { toolCalls: [{ name: 'ask_user', input: { question: 'Which colour?', choices: ['red', 'blue'] } }] }
              : { text: 'Answered.' },
        'CHILD-SLOW': (turn) =>
          turn === 0 ? { toolCalls: [{ name: 'run_shell', input: { command: 'sleep 120' } }] } : { text: 'late' },
      },
    );
    app = await startTestPatchbay({ model, env: { WORKER_CONCURRENCY: '3' } });
    const fixture = app;
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'PARENT',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const parentId = started.session.id;
    const [asker, sleeper] = await waitFor(async () => {
      const children = await fixture.store.children(parentId);
      return children.length === 2 && children;
    }, 'the children');
    const asked = await waitForStatus(app, asker!.sessionId, ['waiting', 'failed', 'completed'], 90_000);
    expect(asked.pendingQuestion?.question).toBe('Which colour?');
    const depth = (await app.store.events(asker!.sessionId, { types: ['tool-end'] })).map((e) => e.event)[0];
    expect(depth).toMatchObject({ name: 'spawn_subtasks', isError: true });
    expect(depth?.type === 'tool-end' && depth.output).toContain('sub-tasks cannot start sub-tasks of their own');
    expect(await app.store.children(asker!.sessionId)).toEqual([]);

    // The question is asked in the parent's log (its threads are the people's), and answered there.
    const relayed = await waitFor(async () => {
      const events = await fixture.store.events(parentId, { types: ['question-asked'] });
      return events[0]?.event;
    }, 'the question in the parent');
    expect(relayed).toMatchObject({ question: 'Sub-task 1 (Asker) asks: Which colour?', choices: ['red', 'blue'] });
    await app.service.sendMessage(parentId, alice, 'blue');
    const answered = await waitForStatus(app, asker!.sessionId, ['completed', 'failed'], 90_000);
    expect(answered.status).toBe('completed');
    const answer = (await app.store.events(asker!.sessionId, { types: ['question-answered'] })).map((e) => e.event);
    expect(answer).toEqual([expect.objectContaining({ text: 'blue' })]);
    const answeredInParent = (await app.store.events(parentId, { types: ['question-answered'] })).map((e) => e.event);
    expect(answeredInParent).toEqual([
      expect.objectContaining({ questionId: (relayed as { questionId: string }).questionId, text: 'blue' }),
    ]);

    // The parent is still waiting on the sleeper; stopping the parent stops it.
    expect((await app.store.get(parentId))?.status).toBe('waiting');
    await waitForStatus(app, sleeper!.sessionId, ['running']);
    await app.service.stop(parentId, alice);
    expect((await waitForStatus(app, sleeper!.sessionId, ['cancelled', 'failed', 'completed'])).status).toBe(
      'cancelled',
    );
    expect((await app.store.get(parentId))?.status).toBe('cancelled');
  });
});

/** When a session's first run started and its last ended, from its status changes. */
async function runSpan(app: PatchbayFixture, sessionId: string): Promise<{ start: number; end: number }> {
  const changes = (await app.store.events(sessionId, { types: ['status-changed'] })).filter(
    (e) => e.event.type === 'status-changed',
  );
  const start = changes.find((e) => e.event.type === 'status-changed' && e.event.to === 'running');
  const end = changes.findLast(
    (e) => e.event.type === 'status-changed' && ['completed', 'failed', 'cancelled'].includes(e.event.to),
  );
  return { start: Date.parse(start!.at), end: Date.parse(end!.at) };
}
