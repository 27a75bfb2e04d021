import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type AnthropicReply, type AnthropicRequest } from '../fakes/fake-anthropic.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const exec = promisify(execFile);

type Result = { code: number; stdout: string; stderr: string };

async function patchbay(args: string[], env: Record<string, string>, timeout = 60_000): Promise<Result> {
  try {
    const { stdout, stderr } = await exec(process.execPath, ['src/cli.ts', ...args], {
      // A developer's .env in the checkout (read by every command) stays out of the test's settings.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir(), PATCHBAY_ENV_FILE: '/dev/null', ...env },
      timeout,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

type TaskFigures = {
  task: string;
  verified: boolean;
  ready: boolean;
  hidden: { outcome: string; detail: string };
  readyWithHiddenFailing: boolean;
  questions: number;
  harnessQuestions: number;
  answers: string[];
  usage: { inputTokens: number; outputTokens: number };
  costUsd: number | null;
  wallMs: number;
  status: string;
};
type Report = {
  models: {
    model: string;
    verifier: string;
    selfGraded: boolean;
    totals: Record<string, number | null>;
    tasks: TaskFigures[];
  }[];
};

/**
 * What each starter task's scripted play must come to: [verified, ready, hidden tests, ready with a
 * hidden test failing, questions the agent asked, questions the harness asked].
 */
const expected: Record<string, [boolean, boolean, string, boolean, number, number]> = {
  'add-capitalize': [true, true, 'passed', false, 0, 0],
  'add-clamp': [true, true, 'passed', false, 0, 0],
  // Breaks the visible test: the checks fail, then fail again with nothing new; kept as a draft.
  'add-median': [false, false, 'failed', false, 0, 1],
  'add-word-count': [true, true, 'passed', false, 0, 0],
  'docs-changelog': [true, true, 'passed', false, 0, 0],
  // The verifier fails it; the agent has nothing more: kept as a draft.
  'docs-jsdoc': [false, false, 'failed', false, 0, 1],
  'docs-readme': [true, true, 'passed', false, 0, 0],
  // Passes its visible test and the verifier, misses the century rule: ready while a hidden test fails.
  'fix-leap-year': [true, true, 'failed', true, 0, 0],
  'fix-range': [true, true, 'passed', false, 0, 0],
  'fix-slugify': [true, true, 'passed', false, 0, 0],
  'fix-sum': [true, true, 'passed', false, 0, 0],
  'question-greeting': [true, true, 'passed', false, 1, 0],
  'question-license': [true, true, 'passed', false, 1, 0],
  'refactor-early-return': [true, true, 'passed', false, 0, 0],
  'refactor-extract-price': [true, true, 'passed', false, 0, 0],
  'refactor-rename-getuser': [true, true, 'passed', false, 0, 0],
};

const verdict = (summary: string) => ({
  relevance: { score: 2, reason: 'As asked.' },
  completeness: { score: 2, reason: 'All of it.' },
  correctness: { score: 2, reason: 'The check passes and the rule is whole.' },
  scope: { score: 2, reason: 'Only dates.js.' },
  summary,
});

/** A model that fixes isLeapYear() whole, and as the verifier passes it. */
function leapYearModel(request: AnthropicRequest): AnthropicReply {
  if (request.tools?.some((t) => t.name === 'record_verdict')) {
    return {
      content: [{ type: 'tool_use', name: 'record_verdict', input: verdict('Implements the Gregorian rule.') }],
    };
  }
  const turn = request.messages.filter((m) => m.role === 'assistant').length;
  if (turn === 0) {
    return {
      content: [
        { type: 'text', text: 'The Gregorian rule has century exceptions.' },
        {
          type: 'tool_use',
          name: 'edit_file',
          input: {
            path: 'dates.js',
            old_string: 'return year > 0;',
            new_string: 'return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);',
          },
        },
      ],
    };
  }
  return { content: [{ type: 'text', text: 'isLeapYear() now follows the Gregorian calendar, centuries included.' }] };
}

describe('patchbay eval', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'patchbay-eval-test-'));
    env = { DATABASE_URL: database.url, DATA_DIR: join(dir, 'data') };
  });
  afterAll(async () => {
    await database.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("runs the starter suite with the scripted model: a table and a JSON report with every task's figures", {
    timeout: 300_000,
  }, async () => {
    const json = join(dir, 'report.json');
    const result = await patchbay(['eval', '--json', json], env, 280_000);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(await readFile(json, 'utf8')) as Report;
    expect(report.models.map((m) => m.model)).toEqual(['scripted']);
    const { tasks, totals } = report.models[0]!;
    const figures = Object.fromEntries(
      tasks.map((t) => [
        t.task,
        [t.verified, t.ready, t.hidden.outcome, t.readyWithHiddenFailing, t.questions, t.harnessQuestions],
      ]),
    );
    expect(figures).toEqual(expected);
    for (const task of tasks) {
      expect(task.status, task.task).toBe('completed');
      expect(task.usage.inputTokens, task.task).toBeGreaterThan(0);
      expect(task.costUsd, task.task).toBe(0);
      expect(task.wallMs, task.task).toBeGreaterThan(0);
    }
    // The hidden tests ran on the pushed commit: their own test names are in their output.
    const byName = Object.fromEntries(tasks.map((t) => [t.task, t]));
    expect(byName['fix-sum']!.hidden.detail).toContain('ok 1 - sums long lists');
    expect(byName['fix-leap-year']!.hidden.detail).toMatch(/not ok \d+ - centuries are not, unless divisible by 400/);
    // Each question task's agent got the answer its task.json gives; the drafts got "keep it".
    expect(byName['question-license']!.answers).toEqual(['MIT']);
    expect(byName['question-greeting']!.answers).toEqual(['Use exactly: Hi <name>, welcome back!']);
    expect(byName['add-median']!.answers).toEqual(['Keep it as a draft']);
    expect(totals).toMatchObject({
      tasks: 16,
      verified: 14,
      ready: 14,
      hiddenPassed: 13,
      readyWithHiddenFailing: 1,
      questions: 2,
      costUsd: 0,
    });

    // The table says the same.
    expect(result.stdout).toMatch(/^fix-leap-year +bug-fix +yes +yes +failed +YES +0 +\d+ +\$0\.0000 +\d+\.\d s$/m);
    expect(result.stdout).toMatch(/^add-median +feature +no +no +failed +no +0 +\d+ +\$0\.0000 +\d+\.\d s$/m);
    expect(result.stdout).toMatch(/^question-license +needs-question +yes +yes +passed +no +1 +\d+ /m);
    expect(result.stdout).toMatch(/^total +16 +14\/16 +14\/16 +13\/16 passed +1 +2 +\d+ +\$0\.0000 /m);
    expect(result.stdout).toContain(`Wrote ${json}`);
  });

  it("compares models named with --model: a real provider adapter against the Anthropic API's loopback fake, priced, never shown the hidden tests", {
    timeout: 180_000,
  }, async () => {
    const suite = join(dir, 'one-task');
    await cp('eval/tasks/fix-leap-year', join(suite, 'fix-leap-year'), { recursive: true });
    const fake = await startFakeAnthropic({ script: leapYearModel, apiKey: 'test-anthropic-key' });
    try {
      const json = join(dir, 'two-models.json');
      const result = await patchbay(
        ['eval', '--suite', suite, '--model', 'scripted', '--model', 'anthropic:claude-sonnet-4-6', '--json', json],
        { ...env, ANTHROPIC_API_KEY: 'test-anthropic-key', ANTHROPIC_BASE_URL: fake.baseUrl },
        160_000,
      );
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(fake.rejections).toEqual([]);
      const report = JSON.parse(await readFile(json, 'utf8')) as Report;
      expect(report.models.map((m) => m.model)).toEqual(['scripted', 'anthropic:claude-sonnet-4-6']);
      const [scripted, claude] = report.models.map((m) => m.tasks[0]!);
      // The scripted play misses the century rule; this model's fix does not.
      expect([scripted!.ready, scripted!.hidden.outcome, scripted!.readyWithHiddenFailing]).toEqual([
        true,
        'failed',
        true,
      ]);
      expect([claude!.verified, claude!.ready, claude!.hidden.outcome, claude!.readyWithHiddenFailing]).toEqual([
        true,
        true,
        'passed',
        false,
      ]);
      // Every call went to the named model, and its list price is counted.
      expect(new Set(fake.calls.map((c) => c.body.model))).toEqual(new Set(['claude-sonnet-4-6']));
      expect(claude!.costUsd).toBeGreaterThan(0);
      expect(claude!.usage.inputTokens).toBe(
        fake.calls.reduce(
          (sum, c) =>
            sum +
            (c.usage?.input_tokens ?? 0) +
            (c.usage?.cache_read_input_tokens ?? 0) +
            (c.usage?.cache_creation_input_tokens ?? 0),
          0,
        ),
      );
      // Neither the agent nor the verifier ever saw the hidden tests.
      expect(JSON.stringify(fake.calls.map((c) => c.body))).not.toContain('unless divisible by 400');
      expect(result.stdout).toContain('Models compared');
      expect(result.stdout).toMatch(
        /^anthropic:claude-sonnet-4-6 +1 +1\/1 +1\/1 +1\/1 passed +0 +0 +\d+ +\$\d+\.\d{4} /m,
      );
    } finally {
      await fake.close();
    }
  });

  it('judges every model with the --verifier model, and says which model graded itself (issue 35)', {
    timeout: 180_000,
  }, async () => {
    const suite = join(dir, 'judged-task');
    await cp('eval/tasks/fix-leap-year', join(suite, 'fix-leap-year'), { recursive: true });
    const fake = await startFakeAnthropic({ script: leapYearModel, apiKey: 'test-anthropic-key' });
    try {
      const json = join(dir, 'judged.json');
      const claude = 'anthropic:claude-sonnet-4-6';
      const result = await patchbay(
        ['eval', '--suite', suite, '--model', 'scripted', '--model', claude, '--verifier', claude, '--json', json],
        { ...env, ANTHROPIC_API_KEY: 'test-anthropic-key', ANTHROPIC_BASE_URL: fake.baseUrl },
        160_000,
      );
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(fake.rejections).toEqual([]);
      const report = JSON.parse(await readFile(json, 'utf8')) as Report;
      expect(report.models.map((m) => [m.model, m.verifier, m.selfGraded])).toEqual([
        ['scripted', claude, false],
        [claude, claude, true],
      ]);
      // One verdict per model's task, both from the named verifier: the scripted agent's work too.
      const verdicts = fake.calls.filter((c) => c.body.tools?.some((t) => t.name === 'record_verdict'));
      expect(verdicts.map((c) => c.body.model)).toEqual(['claude-sonnet-4-6', 'claude-sonnet-4-6']);
      // The verifier's tokens are the scripted run's only priced ones.
      expect(report.models[0]!.tasks[0]!.costUsd).toBeGreaterThan(0);
      expect(result.stdout).toContain(`Model scripted, judged by ${claude}\n`);
      expect(result.stdout).toContain(`Model ${claude}, judged by itself (a self-grade)\n`);
    } finally {
      await fake.close();
    }
  });

  it('refuses a malformed task with its path and what is wrong, before anything runs', async () => {
    const suite = join(dir, 'bad-suite');
    await mkdir(join(suite, 'broken', 'repo'), { recursive: true });
    await mkdir(join(suite, 'broken', 'hidden'), { recursive: true });
    await writeFile(join(suite, 'broken', 'task.json'), JSON.stringify({ request: 'Do it', class: 'bug-fix' }));
    const result = await patchbay(['eval', '--suite', suite], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `patchbay: eval task ${join(suite, 'broken')}: task.json: hiddenTest: Invalid input: expected string, received undefined\n`,
    );
    expect(result.stdout).toBe('');
  });

  it('refuses an unknown provider in --model or --verifier with the ones it knows', async () => {
    for (const flag of ['--model', '--verifier']) {
      const result = await patchbay(['eval', flag, 'acme:big-1'], env);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `patchbay: ${flag} "acme:big-1": the provider must be one of anthropic, openai, opencode-zen, openai-compatible, scripted (as in anthropic:claude-sonnet-4-6)\n`,
      );
    }
  });
});
