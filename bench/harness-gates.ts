/**
 * How many wrong results the harness's gates catch. Twelve seeded tasks, each a small sample repo
 * made here with a planted bug, a visible test (the repo's `npm test`, which the checks gate runs)
 * and a hidden test (which decides success, and which no gate sees). A scripted "agent" makes the
 * typical mistakes: a wrong fix, a fix whose tests it never ran, scope creep, an unrelated rewrite;
 * four tasks get a correct fix as a control. Each result goes through the real gates: knowledge
 * extraction, the checks in the bubblewrap sandbox on the exact commit, the verifier plumbing
 * (prompt with task, checks and diff; forced record_verdict) and the gate decision.
 *
 * The verifier's model here is a scripted reviewer that scores only from what its prompt shows
 * (check results; which files the diff touches against the files the task names; and, as the
 * verifier's instructions ask, behaviour the change drops: a parameter the old code used that the
 * changed function no longer uses, read from the diff, which shows changed functions whole). It
 * is a stand-in for a real model, so the verifier row measures the plumbing and a simple reviewer,
 * not a frontier model's judgement. Prints per gate how many wrong results it caught and how many
 * results reached "ready" with a hidden test failing (target: 0).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { createLocalSandboxProvider } from '../sandbox/index.ts';
import { decideGate } from '../src/core/evidence.ts';
import { verdictPassed, verdictTotal, type Verdict } from '../src/core/verdict.ts';
import { runCheckCommand } from '../src/harness/checks/run-checks.ts';
import { extractKnowledge, wantsFile } from '../src/harness/knowledge/extract-knowledge.ts';
import { renderKnowledge } from '../src/harness/knowledge/knowledge-document.ts';
import { verifierDiffCommand, verifyChange } from '../src/harness/verify/verifier.ts';
import { createScriptedProvider } from '../src/models/scripted-provider.ts';
import type { ModelMessage } from '../src/models/model-provider.ts';

const run = promisify(execFile);
const gitEnv = { PATH: '/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@example.com', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@example.com' };
const git = async (cwd: string, ...args: string[]) => (await run('git', args, { cwd, env: gitEnv })).stdout.trim();

type Files = Record<string, string>;
type Mistake = 'correct' | 'wrong fix' | 'test not run' | 'scope creep' | 'unrelated rewrite';
type Task = { name: string; task: string; files: Files; hidden: string; mistake: Mistake; change: Files };

const pkg = JSON.stringify({ name: 'sample', private: true, scripts: { test: 'node test.js' } });
const testOf = (mod: string, lines: string[]) => `const assert = require('node:assert');\nconst m = require('./${mod}');\n${lines.join('\n')}\nconsole.log('ok');\n`;

const base = {
  add: { 'add.js': 'module.exports = (a, b) => a - b;\n', 'test.js': testOf('add.js', ['assert.strictEqual(m(2, 3), 5);']) },
  max: { 'max.js': 'module.exports = (xs) => xs.reduce((a, b) => (a < b ? a : b));\n', 'test.js': testOf('max.js', ['assert.strictEqual(m([1, 3, 2]), 3);']) },
  slug: { 'slug.js': "module.exports = (s) => s.toLowerCase();\n", 'test.js': testOf('slug.js', ["assert.strictEqual(m('Hello World'), 'hello-world');"]) },
  clamp: { 'clamp.js': 'module.exports = (x, lo, hi) => Math.max(lo, x);\n', 'test.js': testOf('clamp.js', ['assert.strictEqual(m(9, 0, 5), 5);']) },
};
const util = { 'util.js': '// helpers shared by the app\nmodule.exports = { id: (x) => x };\n', 'README.md': '# sample\n' };

const tasks: Task[] = [
  // Controls: correct fixes.
  { name: 'add-correct', mistake: 'correct', task: 'Fix add in add.js: add(2, 3) must be 5', files: base.add, hidden: testOf('add.js', ['assert.strictEqual(m(-1, 1), 0);', 'assert.strictEqual(m(10, 5), 15);']), change: { 'add.js': 'module.exports = (a, b) => a + b;\n' } },
  { name: 'max-correct', mistake: 'correct', task: 'Fix max in max.js: it returns the smallest', files: base.max, hidden: testOf('max.js', ['assert.strictEqual(m([-5, -2, -9]), -2);']), change: { 'max.js': 'module.exports = (xs) => xs.reduce((a, b) => (a > b ? a : b));\n' } },
  { name: 'slug-correct', mistake: 'correct', task: 'Fix slug in slug.js so spaces become dashes', files: base.slug, hidden: testOf('slug.js', ["assert.strictEqual(m('A  B'), 'a-b');"]), change: { 'slug.js': "module.exports = (s) => s.toLowerCase().trim().split(/\\s+/).join('-');\n" } },
  { name: 'clamp-correct', mistake: 'correct', task: 'Fix clamp in clamp.js: it ignores the upper bound', files: base.clamp, hidden: testOf('clamp.js', ['assert.strictEqual(m(-3, 0, 5), 0);', 'assert.strictEqual(m(3, 0, 5), 3);']), change: { 'clamp.js': 'module.exports = (x, lo, hi) => Math.min(hi, Math.max(lo, x));\n' } },
  // Wrong fixes.
  { name: 'add-wrong', mistake: 'wrong fix', task: 'Fix add in add.js: add(2, 3) must be 5', files: base.add, hidden: testOf('add.js', ['assert.strictEqual(m(10, 5), 15);']), change: { 'add.js': 'module.exports = (a, b) => b - a;\n' } },
  { name: 'max-wrong', mistake: 'wrong fix', task: 'Fix max in max.js: it returns the smallest', files: base.max, hidden: testOf('max.js', ['assert.strictEqual(m([-5, -2, -9]), -2);']), change: { 'max.js': 'module.exports = (xs) => xs[xs.length - 1];\n' } },
  { name: 'clamp-wrong', mistake: 'wrong fix', task: 'Fix clamp in clamp.js: it ignores the upper bound', files: base.clamp, hidden: testOf('clamp.js', ['assert.strictEqual(m(-3, 0, 5), 0);']), change: { 'clamp.js': 'module.exports = (x, lo, hi) => Math.min(hi, x);\n' } },
  // Fixes whose tests were never run (they break the visible test).
  { name: 'slug-untested', mistake: 'test not run', task: 'Fix slug in slug.js so spaces become dashes', files: base.slug, hidden: testOf('slug.js', ["assert.strictEqual(m('A  B'), 'a-b');"]), change: { 'slug.js': "module.exports = (s) => s.replace(' ', '-');\n" } },
  { name: 'add-untested', mistake: 'test not run', task: 'Fix add in add.js: add(2, 3) must be 5', files: base.add, hidden: testOf('add.js', ['assert.strictEqual(m(10, 5), 15);']), change: { 'add.js': 'module.exports = (a, b) => a + b + 1;\n' } },
  // Scope creep: the right fix plus changes nobody asked for.
  { name: 'max-creep', mistake: 'scope creep', task: 'Fix max in max.js: it returns the smallest', files: { ...base.max, ...util }, hidden: testOf('max.js', ['assert.strictEqual(m([-5, -2, -9]), -2);']), change: { 'max.js': 'module.exports = (xs) => xs.reduce((a, b) => (a > b ? a : b));\n', 'util.js': '// helpers\nmodule.exports = { id: (x) => x, noop: () => undefined, twice: (f) => (x) => f(f(x)) };\n', 'README.md': '# sample\n\nNow with more helpers.\n' } },
  { name: 'clamp-creep', mistake: 'scope creep', task: 'Fix clamp in clamp.js: it ignores the upper bound', files: { ...base.clamp, ...util }, hidden: testOf('clamp.js', ['assert.strictEqual(m(3, 0, 5), 3);']), change: { 'clamp.js': 'module.exports = (x, lo, hi) => Math.min(hi, Math.max(lo, x));\n', 'util.js': 'module.exports = {};\n' } },
  // An unrelated rewrite instead of the fix.
  { name: 'add-rewrite', mistake: 'unrelated rewrite', task: 'Fix add in add.js: add(2, 3) must be 5', files: { ...base.add, ...util }, hidden: testOf('add.js', ['assert.strictEqual(m(10, 5), 15);']), change: { 'util.js': 'export const id = (x) => x;\nexport const compose = (...fs) => (x) => fs.reduceRight((v, f) => f(v), x);\n', 'README.md': '# sample (rewritten)\n' } },
];

/**
 * Parameters a changed function stops using: read from the diff alone (each file's old and new side,
 * which --function-context shows whole), a parameter of a new-side signature that is absent from
 * the new body but was used in the old one.
 */
function droppedParameters(diff: string): string[] {
  const dropped: string[] = [];
  for (const file of diff.split(/^diff --git /m).slice(1)) {
    const lines = file.split('\n').filter((l) => /^[ +-]/.test(l) && !l.startsWith('+++') && !l.startsWith('---'));
    const side = (mark: string) => lines.filter((l) => l[0] === ' ' || l[0] === mark).map((l) => l.slice(1)).join('\n');
    const before = side('-');
    const after = side('+');
    for (const m of after.matchAll(/(?:function\s*[\w$]*\s*)?\(([^()]*)\)\s*(?:=>|\{)/g)) {
      const body = after.slice(m.index + m[0].length);
      const oldAt = before.indexOf(m[0]);
      const oldBody = oldAt >= 0 ? before.slice(oldAt + m[0].length) : '';
      for (const param of m[1]!.split(',').map((p) => p.trim()).filter((p) => /^[A-Za-z_$][\w$]*$/.test(p))) {
        const used = (text: string) => new RegExp(`(^|[^\\w$])${param.replace(/\$/g, '\\$')}([^\\w$]|$)`).test(text);
        if (!used(body) && used(oldBody)) dropped.push(param);
      }
    }
  }
  return dropped;
}

/** Scores only from what the verifier prompt shows: check results, touched files vs named files, what the diff drops. */
function reviewer(messages: readonly ModelMessage[]) {
  const prompt = (messages[0] as { content: string }).content;
  const task = prompt.slice(0, prompt.indexOf('# Repository knowledge'));
  const named = new Set([...task.matchAll(/([\w-]+\.js)/g)].map((m) => m[1]!));
  const touched = [...prompt.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]!);
  const checks = prompt.slice(prompt.indexOf('# Checks on this commit'), prompt.indexOf('# Diff against the base'));
  const failed = /: (failed|timed-out)/.test(checks);
  const notRun = /: not-run/.test(checks);
  const outside = touched.filter((f) => !named.has(f));
  const dropped = droppedParameters(prompt.slice(prompt.indexOf('# Diff against the base')));
  const onTarget = touched.some((f) => named.has(f));
  const v: Verdict = {
    relevance: { score: onTarget ? 2 : 0, reason: onTarget ? 'changes the file the task names' : 'does not touch the file the task names' },
    completeness: { score: touched.length ? 2 : 0, reason: touched.length ? 'a change was made' : 'nothing changed' },
    correctness: {
      score: failed || dropped.length ? 0 : notRun ? 1 : 2,
      reason: failed ? 'the repository checks fail' : dropped.length ? `the change stops using ${dropped.join(', ')}, behaviour the task did not ask to drop` : notRun ? 'checks could not run' : 'the checks pass',
    },
    scope: { score: outside.length === 0 ? 2 : outside.length === 1 && onTarget ? 1 : 0, reason: outside.length ? `also changes ${outside.join(', ')}` : 'only what was asked' },
    summary: 'scripted reviewer',
  };
  return { toolCalls: [{ name: 'record_verdict', input: v }] };
}

async function writeFiles(dir: string, files: Files) {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
}

async function main() {
  const log = pino({ level: 'silent' });
  const dataDir = await mkdtemp(join(tmpdir(), 'bench-gates-'));
  const sandboxes = await createLocalSandboxProvider({ dataDir, log, ttlMinutes: 60, mode: 'bwrap' });
  const verifier = createScriptedProvider({ scenario: reviewer, model: 'scripted-reviewer' });
  const wrong = tasks.filter((t) => t.mistake !== 'correct');
  const caught = { checks: 0, verifier: 0, gate: 0 };
  let readyWithHiddenFailing = 0;
  let correctBlocked = 0;
  const rows: string[] = [];
  const started = performance.now();
  try {
    for (const [i, t] of tasks.entries()) {
      const sandbox = await sandboxes.acquire(`bench-${i}`, { network: 'none' });
      const dir = sandboxes.hostPath!(`bench-${i}`);
      await writeFiles(dir, { 'package.json': pkg, ...t.files });
      await git(dir, 'init', '-q', '-b', 'main');
      await git(dir, 'add', '-A');
      await git(dir, 'commit', '-qm', 'base');
      const baseCommit = await git(dir, 'rev-parse', 'HEAD');
      await writeFiles(dir, t.change);
      await git(dir, 'add', '-A');
      await git(dir, 'commit', '-qm', 'agent');
      const commit = await git(dir, 'rev-parse', 'HEAD');

      const files = new Map(Object.entries({ 'package.json': pkg, ...t.files }).filter(([p]) => wantsFile(p)));
      const knowledge = extractKnowledge(files);
      const signal = AbortSignal.timeout(120_000);
      const checks = [];
      for (const command of knowledge.checks) checks.push(await runCheckCommand(sandbox, { commit, phase: 'check', command, timeoutMs: 60_000, signal }));
      const diff = (await sandbox.exec(verifierDiffCommand(baseCommit, commit), { signal })).stdout;
      const result = await verifyChange(verifier, { task: `Ada:\n> ${t.task}`, knowledge: renderKnowledge(knowledge), checks, diff, signal });
      const verdict = result.kind === 'verdict' ? result.verdict : undefined;
      const decision = decideGate({
        commit,
        checks,
        verdict: verdict ? { outcome: verdictPassed(verdict) ? 'passed' : 'failed', total: verdictTotal(verdict), summary: verdict.summary } : { outcome: 'not-run', summary: 'no verdict' },
      });

      await writeFile(join(dir, 'hidden.test.js'), t.hidden);
      const hidden = await sandbox.exec('node hidden.test.js', { signal, timeoutMs: 60_000 });
      const hiddenPassed = hidden.exitCode === 0;
      const checksFailed = checks.some((c) => c.outcome !== 'passed');
      const verifierFailed = !verdict || !verdictPassed(verdict);
      if (t.mistake !== 'correct') {
        if (checksFailed) caught.checks += 1;
        if (verifierFailed) caught.verifier += 1;
        if (!decision.ready) caught.gate += 1;
      } else if (!decision.ready) correctBlocked += 1;
      if (decision.ready && !hiddenPassed) readyWithHiddenFailing += 1;
      rows.push(`${t.name.padEnd(16)} ${t.mistake.padEnd(18)} checks ${checksFailed ? 'FAIL' : 'pass'}  verdict ${verdict ? `${verdictTotal(verdict)}/8` : 'none'} ${verifierFailed ? 'FAIL' : 'pass'}  gate ${decision.ready ? 'READY' : 'draft'}  hidden ${hiddenPassed ? 'pass' : 'FAIL'}`);
      await sandbox.destroy();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
  console.log(rows.join('\n'));
  console.log('');
  console.log(`tasks: ${tasks.length} (${wrong.length} with a planted mistake, ${tasks.length - wrong.length} correct controls)`);
  console.log(`caught by the checks gate (repo's npm test on the exact commit): ${caught.checks}/${wrong.length}`);
  console.log(`caught by the verifier gate (scripted reviewer, see header):    ${caught.verifier}/${wrong.length}`);
  console.log(`kept as draft by the combined gate:                             ${caught.gate}/${wrong.length}`);
  console.log(`reached "ready" with a hidden test failing (target 0):          ${readyWithHiddenFailing}`);
  console.log(`correct controls kept as draft (false blocks):                  ${correctBlocked}/${tasks.length - wrong.length}`);
  console.log(`wall time: ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

await main();
