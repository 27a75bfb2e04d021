import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { SessionEvent, StoredEvent } from '../../src/core/events.ts';
import { NO_PULL_REQUEST } from '../../src/core/evidence.ts';
import { taskOutcome } from '../../src/cli/eval/eval-outcome.ts';
import { loadSuite, type EvalTask } from '../../src/cli/eval/eval-suite.ts';

const exec = promisify(execFile);
const task: EvalTask = { name: 't', dir: '/nowhere', request: 'Fix it', class: 'bug-fix', hiddenTest: 'true' };
const log = (...events: SessionEvent[]): StoredEvent[] =>
  events.map((event, i) => ({ sessionId: 's', seq: i + 1, at: new Date(0).toISOString(), event }));
const pushed = (commit: string): SessionEvent => ({ type: 'branch-pushed', branch: 'b', commit, remote: 'r' });
const gate = (commit: string, reasons: string[]): SessionEvent => ({
  type: 'review-gate',
  commit,
  ready: false,
  reasons,
});
const verified = (commit: string, outcome: 'passed' | 'failed'): SessionEvent => ({
  type: 'verification-finished',
  commit,
  attempt: 1,
  outcome,
  summary: '',
});
const failed = { outcome: 'failed' as const, exitCode: 1, detail: '' };
const passed = { outcome: 'passed' as const, exitCode: 0, detail: '' };

describe('eval figures from a session log', () => {
  const cases: [
    string,
    StoredEvent[],
    typeof failed | typeof passed,
    { verified: boolean; ready: boolean; readyWithHiddenFailing: boolean },
  ][] = [
    [
      'gates passed with no pull request to mark: ready',
      log(verified('a', 'passed'), pushed('a'), gate('a', [NO_PULL_REQUEST])),
      failed,
      { verified: true, ready: true, readyWithHiddenFailing: true },
    ],
    [
      'a failed check keeps it a draft',
      log(verified('a', 'passed'), pushed('a'), gate('a', ['`npm test` failed', NO_PULL_REQUEST])),
      failed,
      { verified: true, ready: false, readyWithHiddenFailing: false },
    ],
    [
      'a verdict and gate on an earlier commit do not count for the pushed one',
      log(verified('a', 'passed'), gate('a', [NO_PULL_REQUEST]), pushed('b')),
      failed,
      { verified: false, ready: false, readyWithHiddenFailing: false },
    ],
    [
      'a later failed verdict replaces a passed one',
      log(verified('a', 'passed'), verified('a', 'failed'), pushed('a'), gate('a', ['the verifier failed it'])),
      passed,
      { verified: false, ready: false, readyWithHiddenFailing: false },
    ],
    [
      'ready and the hidden tests pass',
      log(verified('a', 'passed'), pushed('a'), gate('a', [NO_PULL_REQUEST])),
      passed,
      { verified: true, ready: true, readyWithHiddenFailing: false },
    ],
  ];
  it.each(cases)('%s', (_name, events, hidden, want) => {
    const outcome = taskOutcome({
      task,
      status: 'completed',
      error: null,
      events,
      agentQuestionIds: new Set(),
      hidden,
      wallMs: 1,
    });
    expect({
      verified: outcome.verified,
      ready: outcome.ready,
      readyWithHiddenFailing: outcome.readyWithHiddenFailing,
    }).toEqual(want);
  });

  it("counts the agent's questions apart from the harness's, and prices usage by its model", () => {
    const events = log(
      { type: 'question-asked', questionId: 'call_1', question: 'Which license?' },
      { type: 'question-asked', questionId: 'gate:abc', question: 'Keep it as a draft?' },
      {
        type: 'usage',
        turn: 0,
        model: 'claude-sonnet-4-6',
        inputTokens: 1_000_000,
        outputTokens: 0,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
      },
      {
        type: 'usage',
        turn: 0,
        model: 'scripted',
        inputTokens: 5,
        outputTokens: 5,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
      },
    );
    const outcome = taskOutcome({
      task,
      status: 'completed',
      error: null,
      events,
      agentQuestionIds: new Set(['call_1']),
      hidden: passed,
      wallMs: 1,
    });
    expect([outcome.questions, outcome.harnessQuestions]).toEqual([1, 1]);
    expect(outcome.costUsd).toBeCloseTo(3, 6);
    const unknown = taskOutcome({
      task,
      status: 'completed',
      error: null,
      events: log({
        type: 'usage',
        turn: 0,
        model: 'acme-big-1',
        inputTokens: 1,
        outputTokens: 1,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
      }),
      agentQuestionIds: new Set(),
      hidden: passed,
      wallMs: 1,
    });
    expect(unknown.costUsd).toBeNull();
  });
});

describe('the starter suite', () => {
  it("has every class, and each task's hidden tests fail on its repository as given (they test the change)", {
    timeout: 120_000,
  }, async () => {
    const tasks = await loadSuite('eval/tasks');
    expect(tasks.length).toBeGreaterThanOrEqual(15);
    expect(new Set(tasks.map((t) => t.class))).toEqual(
      new Set(['bug-fix', 'feature', 'refactor', 'docs', 'needs-question']),
    );
    for (const t of tasks) {
      const dir = await mkdtemp(join(tmpdir(), 'patchbay-eval-base-'));
      try {
        await cp(join(t.dir, 'repo'), dir, { recursive: true });
        // The hidden tests are not in the repository the agent clones.
        const hidden = (await readdir(join(t.dir, 'hidden'), { recursive: true, withFileTypes: true })).filter((e) =>
          e.isFile(),
        );
        for (const file of hidden) {
          const name = relative(join(t.dir, 'hidden'), join(file.parentPath, file.name));
          await expect(readFile(join(dir, name), 'utf8'), `${t.name}: ${name}`).rejects.toThrow(/ENOENT/);
        }
        await cp(join(t.dir, 'hidden'), dir, { recursive: true });
        const ran = await exec('sh', ['-c', t.hiddenTest], { cwd: dir }).then(
          () => 0,
          (error: { code: number }) => error.code,
        );
        expect(ran, t.name).not.toBe(0);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  });
});
