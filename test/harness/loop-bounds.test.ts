import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import type { EventOf, StoredEvent } from '../../src/core/events.ts';
import type { ModelMessage, ModelProvider, TurnRequest } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };
const of = <T extends StoredEvent['event']['type']>(events: StoredEvent[], type: T) =>
  events.filter((e) => e.event.type === type).map((e) => e.event as EventOf<T>);
const write = (path: string, content: string): ScriptedTurn => ({
  toolCalls: [{ name: 'write_file', input: { path, content } }],
});
const fromHarness = (events: StoredEvent[], words: string) =>
  of(events, 'user-message').filter((m) => m.actor.source === 'system' && m.text.includes(words));

/** The agent, by the request it works on and how many times checks came back since. */
function agent(messages: readonly ModelMessage[]): ScriptedTurn {
  const last = messages.findLastIndex((m) => m.role === 'user');
  const turn = messages.slice(last + 1).filter((m) => m.role === 'assistant').length;
  const step = (...turns: ScriptedTurn[]) => turns[Math.min(turn, turns.length - 1)]!;
  const texts = messages.flatMap((m) => (m.role === 'user' ? [m.content] : []));
  const rounds = texts.filter((t) => t.includes('checks on your commit')).length;
  const all = texts.join('\n');
  if (all.includes('try another approach'))
    return step(write('add.js', 'module.exports = (a, b) => a + b;\n'), { text: 'Fixed add another way.' });
  if (all.includes('outside please'))
    return step(write('add.js', 'module.exports = (a, b) => b - a;\n'), {
      text: 'I could not fix it.\nOUTSIDE-TASK: the test needs a database this sandbox does not have',
    });
  if (all.includes('nothing new please'))
    return rounds === 0
      ? step(write('add.js', 'module.exports = (a, b) => b - a;\n'), { text: 'Fixed add.' })
      : { text: 'I have nothing more to change.' };
  if (all.includes('same failure please'))
    return step(write('add.js', `module.exports = (a, b) => b - a; // attempt ${rounds}\n`), {
      text: `Attempt ${rounds}.`,
    });
  if (all.includes('rounds please'))
    return step(write('add.js', `module.exports = (a, b) => a - b + ${Math.min(rounds, 3)};\n`), {
      text: `Attempt ${rounds}.`,
    });
  if (all.includes('Redesign'))
    return step({ text: 'Plan: split add.js into a module per operation. Shall I go ahead?' });
  if (all.includes('budget please'))
    return step(...Array.from({ length: 8 }, (_, i) => write(`notes-${i}.md`, `note ${i}\n`)), {
      text: 'Wrote notes.',
    });
  return step(write('NOTES.md', `round ${rounds}\n`), { text: 'Wrote notes.' });
}

/** The scripted agent, keeping every request (the system prompt included). */
function recording(): { provider: ModelProvider; requests: TurnRequest[] } {
  const scripted = createScriptedProvider({ scenario: agent });
  const requests: TurnRequest[] = [];
  return {
    requests,
    provider: {
      name: scripted.name,
      model: scripted.model,
      contextWindow: scripted.contextWindow,
      runTurn(request) {
        requests.push(request);
        return scripted.runTurn(request);
      },
    },
  };
}

async function repoWith(testScript: string): Promise<RemoteFixture> {
  const remote = await createRemote();
  await remote.pushCommit(
    'package.json',
    JSON.stringify({ name: 'calc', private: true, scripts: { test: testScript } }),
    'package',
  );
  await remote.pushCommit(
    'test.js',
    "const assert = require('node:assert');\nassert.strictEqual(require('./add.js')(2, 3), 5);\n",
    'test',
  );
  await remote.pushCommit('add.js', 'module.exports = (a, b) => a - b;\n', 'buggy add');
  return remote;
}

async function start(app: PatchbayFixture, repo: RemoteFixture, text: string) {
  const started = await app.service.start({ thread: { source: 'web' }, actor: alice, text, repo: repo.remote });
  if (started.kind !== 'started') throw new Error(started.kind);
  return started.session.id;
}

describe('bounded check-fix loops, gate answers, plan-first and check time limits', () => {
  let calc: RemoteFixture;
  let slow: RemoteFixture;
  let app: PatchbayFixture;
  const model = recording();
  const cleanups: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    calc = await repoWith('node test.js');
    slow = await repoWith('sleep 60');
    app = await startTestPatchbay({
      model: model.provider,
      env: { CHECK_TIMEOUT_MINUTES: '0.1', GATE_MAX_CHECK_ROUNDS: '2' },
    });
  }, 120_000);
  afterAll(async () => {
    await app?.dispose();
    await calc?.cleanup();
    await slow?.cleanup();
    for (const cleanup of cleanups) await cleanup();
  });

  it('asks at once when the agent says the failure is outside the task, and goes on after "No, try another approach"', {
    timeout: 240_000,
  }, async () => {
    const id = await start(app, calc, 'Fix add in add.js so 2 + 3 is 5, outside please');
    const waiting = await waitForStatus(app, id, ['waiting', 'completed', 'failed'], 120_000);
    expect(waiting.status).toBe('waiting');
    expect(waiting.pendingQuestion?.question).toContain(
      'the agent says the failure is outside the task: the test needs a database this sandbox does not have',
    );
    expect(fromHarness(await app.store.events(id), 'checks on your commit')).toEqual([]);

    await app.service.sendMessage(id, alice, 'No, try another approach', waiting.pendingQuestion!.questionId);
    await waitFor(
      async () => (await app.store.get(id))?.status !== 'waiting' || undefined,
      'the answer to be taken',
      30_000,
    );
    const done = await waitForStatus(app, id, ['completed', 'failed', 'waiting'], 120_000);
    expect(done.status).toBe('completed');
    const checks = of(await app.store.events(id), 'check-finished').filter((c) => c.phase === 'check');
    expect(checks.map((c) => c.outcome)).toEqual(['failed', 'passed']);
    expect(checks[1]!.commit).toBe(done.result?.commit);
  });

  it('ends after "Keep it as a draft"', { timeout: 240_000 }, async () => {
    const id = await start(app, calc, 'Fix add in add.js so 2 + 3 is 5, outside please (again)');
    const waiting = await waitForStatus(app, id, ['waiting', 'completed', 'failed'], 120_000);
    expect(waiting.status).toBe('waiting');
    await app.service.sendMessage(id, alice, 'Keep it as a draft', waiting.pendingQuestion!.questionId);
    const done = await waitForStatus(app, id, ['completed', 'failed'], 60_000);
    expect(of(await app.store.events(id), 'status-changed').at(-1)!.reason).toBe(
      'Keeping the pull request as a draft, as asked.',
    );
    expect(done.status).toBe('completed');
  });

  it('asks people after GATE_MAX_CHECK_ROUNDS rounds of failing checks, each with a new failure', {
    timeout: 240_000,
  }, async () => {
    const id = await start(app, calc, 'Fix add in add.js so 2 + 3 is 5, rounds please');
    const waiting = await waitForStatus(app, id, ['waiting', 'completed', 'failed'], 200_000);
    expect(waiting.status).toBe('waiting');
    expect(waiting.pendingQuestion?.question).toContain('the checks failed in 2 rounds of fixes');
    const events = await app.store.events(id);
    expect(
      of(events, 'check-finished')
        .filter((c) => c.phase === 'check')
        .map((c) => c.outcome),
    ).toEqual(['failed', 'failed']);
    expect(fromHarness(events, 'checks on your commit')).toHaveLength(1);
  });

  it('asks people when the agent finishes again with no new commit and the same checks fail, instead of sending it back again', {
    timeout: 240_000,
  }, async () => {
    // Each run of its check prints something new (as node --test's timings do), so only the commit tells.
    const varying = await repoWith(
      `node -e "console.log('run', Math.random().toString(36).replace(/[0-9a-f.]/g, ''))" && node test.js`,
    );
    cleanups.push(() => varying.cleanup());
    const id = await start(app, varying, 'Fix add in add.js so 2 + 3 is 5, nothing new please');
    const waiting = await waitForStatus(app, id, ['waiting', 'completed', 'failed'], 200_000);
    expect(waiting.status).toBe('waiting');
    expect(waiting.pendingQuestion?.question).toContain('the same checks failed again with nothing new');
    const events = await app.store.events(id);
    const checks = of(events, 'check-finished').filter((c) => c.phase === 'check');
    expect(checks.map((c) => c.outcome)).toEqual(['failed', 'failed']);
    expect(checks[1]!.commit).toBe(checks[0]!.commit);
    expect(fromHarness(events, 'checks on your commit')).toHaveLength(1);
  });

  it('asks people when a new commit fails the same checks the same way, before the round limit (issue 35)', {
    timeout: 240_000,
  }, async () => {
    const id = await start(app, calc, 'Fix add in add.js so 2 + 3 is 5, same failure please');
    const waiting = await waitForStatus(app, id, ['waiting', 'completed', 'failed'], 200_000);
    expect(waiting.status).toBe('waiting');
    expect(waiting.pendingQuestion?.question).toContain('the same checks failed again with nothing new');
    const events = await app.store.events(id);
    const checks = of(events, 'check-finished').filter((c) => c.phase === 'check');
    expect(checks.map((c) => c.outcome)).toEqual(['failed', 'failed']);
    expect(checks[1]!.commit).not.toBe(checks[0]!.commit);
    expect(fromHarness(events, 'checks on your commit')).toHaveLength(1);
  });

  it('gives an architecture-level request the plan-first guidance, and a small fix none', {
    timeout: 240_000,
  }, async () => {
    const from = model.requests.length;
    const id = await start(app, calc, 'Redesign the architecture of add.js');
    await waitForStatus(app, id, ['completed', 'failed', 'waiting'], 120_000);
    const first = model.requests
      .slice(from)
      .find((r) => r.messages.some((m) => m.role === 'user' && m.content.includes('Redesign')))!;
    expect(first.system).toContain(
      'This is an architecture-level request. Before changing any code, read enough to propose a short plan',
    );
    expect(of(await app.store.events(id), 'task-routed')[0]).toMatchObject({
      taskClass: 'architecture',
      maxCostUsd: 10,
      maxMinutes: 60,
    });
    const small = model.requests.find((r) =>
      r.messages.some((m) => m.role === 'user' && m.content.includes('outside please')),
    )!;
    expect(small.system).not.toContain('architecture-level request');
  });

  it('stops a check at CHECK_TIMEOUT_MINUTES and reports it as timed out', { timeout: 240_000 }, async () => {
    const id = await start(app, slow, 'Add a notes file for add.js');
    await waitForStatus(app, id, ['waiting', 'completed', 'failed'], 200_000);
    const checks = of(await app.store.events(id), 'check-finished').filter((c) => c.phase === 'check');
    expect(checks.length).toBeGreaterThan(0);
    expect(checks[0]).toMatchObject({ outcome: 'timed-out', exitCode: null, reason: 'timed out after 6 s' });
    expect(checks[0]!.durationMs).toBeLessThan(30_000);
  });
});

describe("budgets: the class's share, an unknown model price, pause and ask", () => {
  let calc: RemoteFixture;
  let app: PatchbayFixture;

  beforeAll(async () => {
    calc = await repoWith('node test.js');
    // A model the price catalog does not know: it counts at the conservative default ($15/$75 per million).
    app = await startTestPatchbay({
      model: createScriptedProvider({ scenario: agent, model: 'unlisted-model-1' }),
      env: { RUN_MAX_COST_USD: '0.05' },
    });
  }, 120_000);
  afterAll(async () => {
    await app?.dispose();
    await calc?.cleanup();
  });

  it('pauses a small fix at its 30% share of the cost budget, asks, and continues on "Continue"', {
    timeout: 240_000,
  }, async () => {
    const id = await start(app, calc, 'Write notes about add.js, budget please');
    const waiting = await waitForStatus(app, id, ['waiting', 'completed', 'failed'], 120_000);
    expect(waiting.status).toBe('waiting');
    const events = await app.store.events(id);
    expect(of(events, 'task-routed')[0]).toMatchObject({ taskClass: 'small-fix', maxCostUsd: 0.015, maxMinutes: 30 });
    const reached = of(events, 'budget-reached');
    expect(reached).toHaveLength(1);
    expect(reached[0]!.kind).toBe('cost');
    expect(reached[0]!.limit).toBeCloseTo(0.015, 6);
    expect(waiting.pendingQuestion).toMatchObject({ choices: ['Continue', 'Stop'], recommended: 'Continue' });
    expect(waiting.pendingQuestion?.question).toMatch(
      /^I have spent \$0\.\d\d of this task's \$0\.0[12] budget\. Continue\?$/,
    );
    const turnsBefore = of(events, 'usage').length;

    await app.service.sendMessage(id, alice, 'Continue', waiting.pendingQuestion!.questionId);
    await waitFor(
      async () => of(await app.store.events(id), 'usage').length > turnsBefore || undefined,
      'the run to go on',
      60_000,
    );
    const next = await waitForStatus(app, id, ['waiting', 'completed', 'failed'], 120_000);
    expect(next.status).not.toBe('failed');
    expect(of(await app.store.events(id), 'question-answered').map((a) => a.text)).toEqual(['Continue']);
  });
});

describe('the time budget spans every round of a run', () => {
  let slowFail: RemoteFixture;
  let app: PatchbayFixture;

  beforeAll(async () => {
    // Each round's check takes 12 s and fails anew (the agent's attempt changes the assertion).
    slowFail = await repoWith('sleep 12 && node test.js');
    app = await startTestPatchbay({
      model: createScriptedProvider({ scenario: agent }),
      env: { RUN_MAX_MINUTES: '1', GATE_MAX_CHECK_ROUNDS: '20' },
    });
  }, 120_000);
  afterAll(async () => {
    await app?.dispose();
    await slowFail?.cleanup();
  });

  it('pauses a small fix once its rounds together pass its 30 s share, though no round alone does', {
    timeout: 300_000,
  }, async () => {
    const id = await start(app, slowFail, 'Fix add in add.js so 2 + 3 is 5, rounds please');
    const waiting = await waitForStatus(app, id, ['waiting', 'completed', 'failed'], 240_000);
    expect(waiting.status).toBe('waiting');
    const events = await app.store.events(id);
    expect(of(events, 'budget-reached').map((b) => b.kind)).toEqual(['time']);
    expect(of(events, 'budget-reached')[0]!.limit).toBe(0.5);
    expect(waiting.pendingQuestion?.question).toMatch(
      /^This run has worked for 0\.\d of its 0\.5 minutes\. Continue\?$/,
    );
    // More than one round ran before the pause: the budget was not one round's.
    expect(
      new Set(
        of(events, 'check-finished')
          .filter((c) => c.phase === 'check')
          .map((c) => c.commit),
      ).size,
    ).toBeGreaterThan(1);
  });
});
