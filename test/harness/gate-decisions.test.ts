import { describe, expect, it } from 'vitest';
import { verdictPassed } from '../../src/core/verdict.ts';
import { extractKnowledge } from '../../src/harness/knowledge/extract-knowledge.ts';
import { classifyCommand } from '../../src/harness/knowledge/workflow-checks.ts';
import { decideGate, renderEvidence, unjudgedCommit, type Evidence } from '../../src/core/evidence.ts';
import { failureSignature, missingCommandReason, setupFailureReason } from '../../src/harness/checks/run-checks.ts';
import { routeTask } from '../../src/harness/route-task.ts';
import type { CheckRun } from '../../src/harness/checks/check-store.ts';
import { verdict } from '../helpers/scripted-verifier.ts';

describe('verdict threshold: total >= 6 of 8 and no zero', () => {
  it.each([
    [[2, 2, 2, 2], true],
    [[2, 2, 1, 1], true],
    [[2, 1, 1, 1], false],
    [[2, 2, 2, 0], false],
    [[0, 2, 2, 2], false],
    [[1, 1, 1, 1], false],
  ] as const)('%j passes: %s', (scores, passes) => {
    expect(verdictPassed(verdict([...scores] as [0 | 1 | 2, 0 | 1 | 2, 0 | 1 | 2, 0 | 1 | 2], 's'))).toBe(passes);
  });
});

const passedVerdict: Evidence['verdict'] = { outcome: 'passed', total: 8, summary: 'good' };
const check = (outcome: CheckRun['outcome'], extra: Partial<CheckRun> = {}) => ({
  name: 'test',
  command: 'npm test',
  outcome,
  exitCode: outcome === 'passed' ? 0 : outcome === 'failed' ? 1 : null,
  durationMs: 1200,
  ...extra,
});

describe('the review gate', () => {
  it.each([
    ['every check passed and the verdict passed', [check('passed')], passedVerdict, true],
    ['no checks known and the verdict passed', [], passedVerdict, false],
    ['a check failed', [check('failed')], passedVerdict, false],
    ['a check timed out', [check('timed-out')], passedVerdict, false],
    ['a check did not run', [check('not-run', { reason: 'no network' })], passedVerdict, false],
    ['the verdict failed', [check('passed')], { outcome: 'failed', total: 5, summary: 'no' }, false],
    ['the verifier gave no verdict', [check('passed')], { outcome: 'not-run', summary: 'model down' }, false],
    ['nothing was verified', [check('passed')], undefined, false],
  ] as const)('%s → ready %s', (_name, checks, v, ready) => {
    const decision = decideGate({ commit: 'a'.repeat(40), checks: [...checks], ...(v && { verdict: v }) });
    expect(decision.ready).toBe(ready);
    expect(decision.reasons.length === 0).toBe(ready);
  });

  it('lists what could not be checked in the evidence, never as passed', () => {
    const body = renderEvidence(
      decideGate({
        commit: 'b'.repeat(40),
        checks: [check('not-run', { reason: 'setup `npm ci` could not reach the network' })],
        verdict: passedVerdict,
      }),
    );
    expect(body).toContain('⚪ not-run | `npm test`');
    expect(body).toContain('**Could not be checked:**\n- `npm test`: setup `npm ci` could not reach the network');
    expect(body).not.toContain('✅');
  });
});

describe('knowledge extraction: commands only from the repo files', () => {
  it('reads package scripts, lockfile, Makefile and workflow run steps', () => {
    const files = new Map([
      [
        'package.json',
        JSON.stringify({
          scripts: { test: 'vitest run', lint: 'eslint .', build: 'tsc -b' },
          devDependencies: { vitest: '1' },
        }),
      ],
      ['package-lock.json', '{}'],
      ['Makefile', 'check:\n\tnpm test\n'],
      [
        '.github/workflows/ci.yml',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: GitHub Actions expression syntax under test.
        'on: [pull_request]\njobs:\n  t:\n    steps:\n      - run: npm ci\n      - run: |\n          npm run typecheck\n          echo ${{ secrets.X }}\n',
      ],
      ['.github/pull_request_template.md', '## What\n\n## Why'],
      ['AGENTS.md', 'Use tabs.'],
    ]);
    const doc = extractKnowledge(files);
    expect(doc.setup).toEqual([{ name: 'install', command: 'npm ci', source: 'package.json' }]);
    expect(doc.checks.map((c) => [c.name, c.command, c.source])).toEqual([
      ['test', 'npm test', 'package.json scripts.test'],
      ['lint', 'npm run lint', 'package.json scripts.lint'],
      ['build', 'npm run build', 'package.json scripts.build'],
      ['check', 'make check', 'Makefile'],
      ['typecheck', 'npm run typecheck', '.github/workflows/ci.yml'],
    ]);
    expect(doc.conventions[0]).toContain('## What');
    expect(doc.instructions).toEqual([{ source: 'AGENTS.md', text: 'Use tabs.' }]);
  });

  it("skips npm's placeholder test script and names no setup without dependencies", () => {
    const doc = extractKnowledge(
      new Map([['package.json', JSON.stringify({ scripts: { test: 'echo "Error: no test specified" && exit 1' } })]]),
    );
    expect(doc).toMatchObject({ setup: [], checks: [] });
  });

  it.each([
    ['npm ci', 'install'],
    ['pip install -r requirements.txt', 'install'],
    ['npx tsc --noEmit', 'typecheck'],
    ['ruff check .', 'lint'],
    ['pytest -q', 'test'],
    ['cargo build --release', 'build'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: GitHub Actions expression syntax under test.
    ['echo ${{ matrix.node }}', undefined],
    ['docker push x', undefined],
  ])('classifies %s as %s', (command, slot) => {
    expect(classifyCommand(command)).toBe(slot);
  });
});

describe('setup failures in plain words', () => {
  const run = (log: string, exitCode: number | null, outcome: CheckRun['outcome'] = 'failed'): CheckRun => ({
    commit: 'c',
    phase: 'setup',
    name: 'install',
    command: 'npm ci',
    outcome,
    exitCode,
    durationMs: 1,
    logHead: log,
    logTail: '',
    startedAt: new Date(),
    finishedAt: new Date(),
  });
  it.each([
    [
      run('npm error code EAI_AGAIN\nnpm error request to https://registry.npmjs.org/x failed', 1),
      'setup `npm ci` could not reach the network',
    ],
    [run('sh: 1: pnpm: not found', 127), 'setup `npm ci` needs `pnpm`, which the sandbox does not have'],
    [run('npm error code 127', 127), 'setup `npm ci` needs a tool the sandbox does not have'],
    [run('', null, 'timed-out'), 'setup `npm ci` timed out'],
    [run('npm error ERESOLVE', 1), 'setup `npm ci` failed with exit 1'],
  ])('%#', (r, reason) => expect(setupFailureReason(r)).toBe(reason));

  it('reads a plain HTTP 403 as no network only when the egress proxy refused a host the log names', () => {
    const refused = run(
      'npm error code E403\nnpm error 403 403 Forbidden - GET https://registry.npmjs.org/left-pad',
      1,
    );
    expect(setupFailureReason(refused, ['registry.npmjs.org'])).toBe('setup `npm ci` could not reach the network');
    expect(setupFailureReason(refused, ['pypi.org'])).toBe('setup `npm ci` failed with exit 1');
    expect(setupFailureReason(refused)).toBe('setup `npm ci` failed with exit 1');
  });

  it('sees the same failures again through changing durations and ids', () => {
    const failing = (tail: string): CheckRun => ({ ...run('', 1), phase: 'check', command: 'npm test', logTail: tail });
    expect(failureSignature([failing('FAIL a.test.js (12 ms)\nat 10:00:01 id 3f2a9c1')])).toBe(
      failureSignature([failing('FAIL a.test.js (907 ms)\nat 11:20:41 id 77b1e0d')]),
    );
    expect(failureSignature([failing('FAIL a.test.js')])).not.toBe(failureSignature([failing('FAIL b.test.js')]));
  });
});

describe('task routing', () => {
  it.each([
    ['Fix the off-by-one in pagination.ts', 'small-fix'],
    ['Rename getUser to fetchUser everywhere', 'multi-file'],
    ['Migrate from Express to Fastify', 'architecture'],
    ['Redesign the architecture of the billing module', 'architecture'],
    ['improve it', 'unclear'],
    ['fix', 'unclear'],
  ])('%s → %s', (text, taskClass) => {
    expect(routeTask(text).taskClass).toBe(taskClass);
  });
  it('gives architecture and unclear requests a plan or a question first', () => {
    expect(routeTask('Migrate from Express to Fastify').guidance).toContain('ask_user');
    expect(routeTask('improve it').guidance).toContain('ask_user');
    expect(routeTask('Fix the off-by-one in pagination.ts').guidance).toBeUndefined();
  });
});

describe('a missing command is named as the command that is missing', () => {
  const run = (log: string): CheckRun => ({
    commit: 'c',
    phase: 'check',
    name: 'test',
    command: 'npm test',
    outcome: 'failed',
    exitCode: 127,
    durationMs: 1,
    logHead: log,
    logTail: '',
    startedAt: new Date(0),
    finishedAt: new Date(0),
  });
  it.each([
    [
      '> test\n> vitest run\n\nsh: 1: vitest: not found',
      '`vitest` is not installed in the sandbox (`npm test` exited with 127)',
    ],
    ['bash: line 1: jest: command not found', '`jest` is not installed in the sandbox (`npm test` exited with 127)'],
    [
      "/usr/bin/env: 'node': No such file or directory",
      '`node` is not installed in the sandbox (`npm test` exited with 127)',
    ],
    ['sh: 1: npm: not found', '`npm` is not installed in the sandbox (`npm test` exited with 127)'],
    ['exit 127', '`npm test` exited with 127: a command it runs was not found'],
  ])('%j', (log, reason) => expect(missingCommandReason(run(log))).toBe(reason));
});

describe('unjudged commits are never ready', () => {
  it('a pushed commit that is not the judged one gets a decision of its own: draft, saying why', () => {
    const d = unjudgedCommit('b'.repeat(40), 'a'.repeat(40));
    expect(d).toMatchObject({ commit: 'b'.repeat(40), ready: false });
    expect(d.reasons[0]).toBe(
      `${'b'.repeat(12)} is not the commit the checks and the verifier judged (${'a'.repeat(12)}), so it is not verified`,
    );
  });
});

describe('the repeat detector sees the same failure through what changes between runs', () => {
  const failing = (log: string): CheckRun => ({
    commit: 'c',
    phase: 'check',
    name: 'test',
    command: 'npm test',
    outcome: 'failed',
    exitCode: 1,
    durationMs: 1,
    logHead: log,
    logTail: '',
    startedAt: new Date(0),
    finishedAt: new Date(0),
  });
  const same = (a: string, b: string) => failureSignature([failing(a)]) === failureSignature([failing(b)]);
  it.each([
    ['seeds', 'Randomized with seed 48213\nFAIL adds', 'Randomized with seed 9917\nFAIL adds'],
    [
      'seeds as options',
      'pytest -p randomly --randomly-seed=12345\nAssertionError',
      'pytest -p randomly --randomly-seed=777\nAssertionError',
    ],
    ['ports', 'Error: connect ECONNREFUSED 127.0.0.1:45123', 'Error: connect ECONNREFUSED 127.0.0.1:38011'],
    ['listening ports', 'server listening on port 51234\nFAIL', 'server listening on port 40001\nFAIL'],
    ['ISO timestamps', '2026-12-01T09:31:12.345Z ERROR boom', '2026-12-01T10:02:59.001Z ERROR boom'],
    ['clock times', '[09:31:12] FAIL boom', '[10:02:59] FAIL boom'],
    ['durations', 'FAIL adds (12 ms)\nTests: 1 failed, 2.31s', 'FAIL adds (431 ms)\nTests: 1 failed, 0.98s'],
    [
      'temp paths',
      "ENOENT: no such file, open '/tmp/vitest-a8Zx1/out.json'",
      "ENOENT: no such file, open '/tmp/vitest-Q02pk/out.json'",
    ],
    ['ANSI colours', '\x1b[31mFAIL\x1b[39m adds', '\x1b[1m\x1b[31mFAIL\x1b[39m\x1b[22m adds'],
    ['pids', 'worker pid 4123 exited: AssertionError', 'worker pid 977 exited: AssertionError'],
  ])('%s', (_what, a, b) => expect(same(a, b)).toBe(true));

  it('still tells different failures apart, even under the same stack trace', () => {
    const trace = Array.from({ length: 25 }, (_, i) => `    at frame${i} (node:internal/x:${i}:1)`).join('\n');
    expect(same(`Error: Cannot find module './a.js'\n${trace}`, `Error: Cannot find module './b.js'\n${trace}`)).toBe(
      false,
    );
    expect(same('expected 5, got 4', 'expected 5, got 6')).toBe(false);
  });
});
