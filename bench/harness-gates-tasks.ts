/**
 * The bench's seeded tasks: a small repository each, the request, the agent's attempts (the next
 * one each time the harness sends the work back) and a hidden test that decides whether the result
 * is right. `checksCanSee`: the repository's own checks could catch a wrong result (false for a
 * repository without tests).
 */
export type Attempt = { files?: Record<string, string>; shell?: string[] };
export type BenchTask = {
  name: string;
  kind: string;
  request: string;
  files: Record<string, string>;
  attempts: Attempt[];
  hidden: string;
  checksCanSee: boolean;
};

const pkg = (test?: string) => JSON.stringify({ name: 'sample', private: true, ...(test && { scripts: { test } }) });
const testOf = (mod: string, lines: string[], pre: string[] = []) =>
  `const assert = require('node:assert');\n${pre.join('\n')}\nconst m = require('./${mod}');\n${lines.join('\n')}\nconsole.log('ok');\n`;

const add = {
  'add.js': 'module.exports = (a, b) => a - b;\n',
  'test.js': testOf('add.js', ['assert.strictEqual(m(2, 3), 5);']),
};
const max = {
  'max.js': 'module.exports = (xs) => xs.reduce((a, b) => (a < b ? a : b));\n',
  'test.js': testOf('max.js', ['assert.strictEqual(m([1, 3, 2]), 3);']),
};
const slug = {
  'slug.js': 'module.exports = (s) => s.toLowerCase();\n',
  'test.js': testOf('slug.js', ["assert.strictEqual(m('Hello World'), 'hello-world');"]),
};
const clamp = {
  'clamp.js': 'module.exports = (x, lo, hi) => Math.max(lo, x);\n',
  'test.js': testOf('clamp.js', ['assert.strictEqual(m(9, 0, 5), 5);']),
};
const util = {
  'util.js': '// helpers shared by the app\nmodule.exports = { id: (x) => x };\n',
  'README.md': '# sample\n',
};

const fixes = {
  add: { 'add.js': 'module.exports = (a, b) => a + b;\n' },
  max: { 'max.js': 'module.exports = (xs) => xs.reduce((a, b) => (a > b ? a : b));\n' },
  slug: { 'slug.js': "module.exports = (s) => s.toLowerCase().trim().split(/\\s+/).join('-');\n" },
  clamp: { 'clamp.js': 'module.exports = (x, lo, hi) => Math.min(hi, Math.max(lo, x));\n' },
};
const hidden = {
  add: testOf('add.js', ['assert.strictEqual(m(-1, 1), 0);', 'assert.strictEqual(m(10, 5), 15);']),
  max: testOf('max.js', ['assert.strictEqual(m([-5, -2, -9]), -2);', 'assert.strictEqual(m([7, 1, 2]), 7);']),
  slug: testOf('slug.js', ["assert.strictEqual(m('A  B'), 'a-b');"]),
  clamp: testOf('clamp.js', ['assert.strictEqual(m(-3, 0, 5), 0);', 'assert.strictEqual(m(3, 0, 5), 3);']),
};
const ask = {
  add: 'Fix add in add.js: add(2, 3) must be 5',
  max: 'Fix max in max.js: it returns the smallest',
  slug: 'Fix slug in slug.js so spaces become dashes',
  clamp: 'Fix clamp in clamp.js: it ignores the upper bound',
};
// Where a flaky test keeps its state between runs: beside the checkout the checks run in (the
// workspace's .git), whether that is the workspace itself or a fresh checkout inside its .git.
const flakyState =
  "const path = require('node:path'); const state = path.basename(__dirname) === 'patchbay-check' ? path.join(__dirname, '..', 'flaky') : path.join(__dirname, '.git', 'flaky');";
// Values that change from run to run of the same failure.
const noisy = [
  "console.log('Randomized with seed ' + Math.floor(Math.random() * 1e6));",
  "console.log('server listening on 127.0.0.1:' + (20000 + Math.floor(Math.random() * 20000)));",
  'console.log(new Date().toISOString() + " starting, tmp /tmp/run-" + Math.random().toString(36).slice(2));',
];
const deployWorkflow = `name: CI\non:\n  pull_request:\n  push:\n    branches: [main]\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: docker build -t sample .\n      - run: aws s3 sync ./dist s3://sample-bucket\n`;

export const benchTasks: BenchTask[] = [
  // Correct fixes (controls).
  {
    name: 'add-correct',
    kind: 'correct',
    request: ask.add,
    files: { 'package.json': pkg('node test.js'), ...add },
    attempts: [{ files: fixes.add }],
    hidden: hidden.add,
    checksCanSee: true,
  },
  {
    name: 'max-correct',
    kind: 'correct',
    request: ask.max,
    files: { 'package.json': pkg('node test.js'), ...max },
    attempts: [{ files: fixes.max }],
    hidden: hidden.max,
    checksCanSee: true,
  },
  {
    name: 'slug-correct',
    kind: 'correct',
    request: ask.slug,
    files: { 'package.json': pkg('node test.js'), ...slug },
    attempts: [{ files: fixes.slug }],
    hidden: hidden.slug,
    checksCanSee: true,
  },
  {
    name: 'clamp-correct',
    kind: 'correct',
    request: ask.clamp,
    files: { 'package.json': pkg('node test.js'), ...clamp },
    attempts: [{ files: fixes.clamp }],
    hidden: hidden.clamp,
    checksCanSee: true,
  },
  // Wrong fixes that pass the visible test: only the hidden test (or a reviewer) can tell.
  {
    name: 'add-wrong',
    kind: 'wrong fix, visible test passes',
    request: ask.add,
    files: { 'package.json': pkg('node test.js'), ...add },
    attempts: [{ files: { 'add.js': 'module.exports = (a, b) => (a === 2 && b === 3 ? 5 : a - b);\n' } }],
    hidden: hidden.add,
    checksCanSee: false,
  },
  {
    name: 'max-wrong',
    kind: 'wrong fix, visible test passes',
    request: ask.max,
    files: { 'package.json': pkg('node test.js'), ...max },
    attempts: [{ files: { 'max.js': 'module.exports = (xs) => xs[1];\n' } }],
    hidden: hidden.max,
    checksCanSee: false,
  },
  {
    name: 'clamp-wrong',
    kind: 'wrong fix, drops a parameter',
    request: ask.clamp,
    files: { 'package.json': pkg('node test.js'), ...clamp },
    attempts: [{ files: { 'clamp.js': 'module.exports = (x, lo, hi) => Math.min(hi, x);\n' } }],
    hidden: hidden.clamp,
    checksCanSee: false,
  },
  // Untested first attempts: the checks catch them, the second attempt is right.
  {
    name: 'slug-untested',
    kind: 'visible test fails, then fixed',
    request: ask.slug,
    files: { 'package.json': pkg('node test.js'), ...slug },
    attempts: [{ files: { 'slug.js': "module.exports = (s) => s.replace(' ', '-');\n" } }, { files: fixes.slug }],
    hidden: hidden.slug,
    checksCanSee: true,
  },
  {
    name: 'add-untested',
    kind: 'visible test fails, then fixed',
    request: ask.add,
    files: { 'package.json': pkg('node test.js'), ...add },
    attempts: [{ files: { 'add.js': 'module.exports = (a, b) => a + b + 1;\n' } }, { files: fixes.add }],
    hidden: hidden.add,
    checksCanSee: true,
  },
  // Scope creep and an unrelated rewrite.
  {
    name: 'max-creep',
    kind: 'scope creep',
    request: ask.max,
    files: { 'package.json': pkg('node test.js'), ...max, ...util },
    attempts: [
      { files: { ...fixes.max, 'util.js': 'module.exports = {};\n', 'README.md': '# sample, now with more\n' } },
    ],
    hidden: hidden.max,
    checksCanSee: true,
  },
  {
    name: 'add-rewrite',
    kind: 'unrelated rewrite',
    request: ask.add,
    files: { 'package.json': pkg('node test.js'), ...add, ...util },
    attempts: [
      { files: { 'util.js': 'module.exports = { id: (x) => x, twice: (f) => (x) => f(f(x)) };\n' } },
      { files: { 'README.md': '# sample (rewritten)\n' } },
    ],
    hidden: hidden.add,
    checksCanSee: true,
  },
  // Work that passes only in the agent's own tree.
  {
    name: 'add-ignored-helper',
    kind: 'needs a gitignored file',
    request: ask.add,
    files: { 'package.json': pkg('node test.js'), '.gitignore': 'build/\n', ...add },
    attempts: [
      {
        files: {
          'build/helper.js': 'module.exports = (a, b) => a + b;\n',
          'add.js': "module.exports = require('./build/helper.js');\n",
        },
      },
      { files: fixes.add },
    ],
    hidden: hidden.add,
    checksCanSee: true,
  },
  {
    name: 'max-excluded-helper',
    kind: 'needs a file hidden by .git/info/exclude',
    request: ask.max,
    files: { 'package.json': pkg('node test.js'), ...max },
    attempts: [
      {
        files: {
          'maxof.js': 'module.exports = (xs) => xs.reduce((a, b) => (a > b ? a : b));\n',
          'max.js': "module.exports = require('./maxof.js');\n",
        },
        shell: ['echo /maxof.js >> .git/info/exclude'],
      },
      { files: fixes.max },
    ],
    hidden: hidden.max,
    checksCanSee: true,
  },
  // A check that commits in the agent's workspace after it passed, with a wrong fix.
  {
    name: 'clamp-check-moves-head',
    kind: 'a check moves HEAD',
    request: ask.clamp,
    files: {
      'package.json': pkg(
        'node test.js && git -C /workspace -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m moved',
      ),
      ...clamp,
    },
    attempts: [{ files: { 'clamp.js': 'module.exports = (x, lo, hi) => Math.min(hi, x);\n' } }],
    hidden: hidden.clamp,
    checksCanSee: false,
  },
  // Repositories without tests.
  {
    name: 'add-no-tests-wrong',
    kind: 'no tests, wrong fix',
    request: ask.add,
    files: { 'package.json': pkg(), 'add.js': add['add.js'] },
    attempts: [{ files: { 'add.js': 'module.exports = (a, b) => b - a;\n' } }],
    hidden: hidden.add,
    checksCanSee: false,
  },
  {
    name: 'max-no-tests-correct',
    kind: 'no tests, correct fix',
    request: ask.max,
    files: { 'package.json': pkg(), 'max.js': max['max.js'] },
    attempts: [{ files: fixes.max }],
    hidden: hidden.max,
    checksCanSee: false,
  },
  // A flaky test: fails on its first run, passes on the next, on the same correct commit.
  {
    name: 'slug-flaky',
    kind: 'flaky test',
    request: ask.slug,
    files: {
      'package.json': pkg('node test.js'),
      'slug.js': slug['slug.js'],
      'test.js': testOf(
        'slug.js',
        ["assert.strictEqual(m('Hello World'), 'hello-world');"],
        [
          flakyState,
          "const fs = require('node:fs'); if (!fs.existsSync(state)) { fs.writeFileSync(state, '1'); console.error('Error: read ECONNRESET'); process.exit(1); } fs.unlinkSync(state);",
        ],
      ),
    },
    attempts: [{ files: fixes.slug }, {}],
    hidden: hidden.slug,
    checksCanSee: true,
  },
  // The same failure every round, its log different only by a seed, a port, a timestamp and a temp path.
  {
    name: 'add-seeded',
    kind: 'same failure, random seed and port',
    request: ask.add,
    files: {
      'package.json': pkg('node test.js'),
      'add.js': add['add.js'],
      'test.js': testOf('add.js', ['assert.strictEqual(m(2, 3), 5);'], noisy),
    },
    attempts: [{ files: { 'add.js': 'module.exports = (a, b) => a * b;\n' } }],
    hidden: hidden.add,
    checksCanSee: true,
  },
  {
    name: 'clamp-seeded',
    kind: 'same failure, timestamps and temp paths',
    request: ask.clamp,
    files: {
      'package.json': pkg('node test.js'),
      'clamp.js': clamp['clamp.js'],
      'test.js': testOf('clamp.js', ['assert.strictEqual(m(9, 0, 5), 5);'], noisy),
    },
    attempts: [{ files: { 'clamp.js': 'module.exports = (x, lo) => Math.max(lo, x) - 1;\n' } }],
    hidden: hidden.clamp,
    checksCanSee: true,
  },
  // CI workflows: a test step to take, deploy steps never to run.
  {
    name: 'max-ci-deploy',
    kind: 'CI has docker and aws steps',
    request: ask.max,
    files: { 'package.json': pkg('node test.js'), ...max, '.github/workflows/ci.yml': deployWorkflow },
    attempts: [{ files: fixes.max }],
    hidden: hidden.max,
    checksCanSee: true,
  },
  {
    name: 'slug-ci-only',
    kind: 'tests only in CI',
    request: ask.slug,
    files: {
      'package.json': pkg(),
      ...slug,
      '.github/workflows/ci.yml':
        'on: [pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: node test.js\n',
    },
    attempts: [
      { files: { 'slug.js': "module.exports = (s) => s.toUpperCase().replace(' ', '-');\n" } },
      { files: fixes.slug },
    ],
    hidden: hidden.slug,
    checksCanSee: true,
  },
  {
    name: 'clamp-creep-correct',
    kind: 'correct, also edits a file',
    request: ask.clamp,
    files: { 'package.json': pkg('node test.js'), ...clamp, ...util },
    attempts: [{ files: { ...fixes.clamp, 'README.md': '# sample\n\nclamp(x, lo, hi) keeps x within [lo, hi].\n' } }],
    hidden: hidden.clamp,
    checksCanSee: true,
  },
  {
    name: 'add-correct-2',
    kind: 'correct',
    request: 'Fix add in add.js so it adds; add(2, 3) is 5',
    files: { 'package.json': pkg('node test.js'), ...add },
    attempts: [{ files: { 'add.js': 'module.exports = function add(a, b) {\n  return a + b;\n};\n' } }],
    hidden: hidden.add,
    checksCanSee: true,
  },
];
