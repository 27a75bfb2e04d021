import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Actor } from '../core/actor.ts';
import type { Config } from '../config.ts';
import type { Verdict } from '../core/verdict.ts';
import { createScriptedProvider, createSequenceProvider, type ScriptedTurn } from '../models/scripted-provider.ts';
import { runTask } from './run-task.ts';

const run = promisify(execFile);

const readme = `# greeter

A tiny library that greets people.

## Usage

\`\`\`js
import { greet } from './app.js';
greet('Ada'); // 'Hello, Ada!'
\`\`\`

Written by Patchbay's demo.
`;

/** The demo model: look around, write a README, check git status, report. */
export const demoScenario: ScriptedTurn[] = [
  { text: 'Let me look at the project first.', toolCalls: [{ name: 'list_files', input: { path: '.' } }] },
  { toolCalls: [{ name: 'read_file', input: { path: 'app.js' } }] },
  {
    text: 'It exports greet(); I will document it.',
    toolCalls: [{ name: 'write_file', input: { path: 'README.md', content: readme } }],
  },
  { toolCalls: [{ name: 'git_status', input: {} }] },
  { text: 'Added README.md describing greet() with a usage example; git status shows it as the only change.' },
];

/** The demo's independent reviewer, through its forced record_verdict tool like a real one. */
const demoVerdict: Verdict = {
  relevance: { score: 2, reason: 'A README is what was asked for.' },
  completeness: { score: 2, reason: 'It says what the library does and shows a usage example.' },
  correctness: { score: 2, reason: 'The example matches greet() in app.js.' },
  scope: { score: 2, reason: 'Only README.md changed.' },
  summary: 'Adds a README that documents greet() with a correct example.',
};

/**
 * `patchbay demo`: a temporary git repository with a bare "remote", a scripted model, and the real
 * runner, sandbox and harness; then the remote's log of the pushed branch. Needs no keys. Uses its
 * own database under DATA_DIR/demo so it never disturbs a running server.
 */
export async function runDemo(options: { config: Config; actor: Actor }): Promise<number> {
  const root = await mkdtemp(join(tmpdir(), 'patchbay-demo-'));
  try {
    const remote = join(root, 'greeter.git');
    await makeRepo(root, remote);
    process.stdout.write(`Demo repository: ${remote}\n\n`);
    const config: Config = { ...options.config, dataDir: join(options.config.dataDir, 'demo') };
    await mkdir(config.dataDir, { recursive: true });
    const code = await runTask({
      config,
      repo: remote,
      task: 'Write a README for this project',
      actor: options.actor,
      model: createScriptedProvider({ scenario: demoScenario, model: 'scripted' }),
      verifierModel: createSequenceProvider(
        [{ toolCalls: [{ name: 'record_verdict', input: demoVerdict }] }],
        'scripted',
      ),
    });
    if (code === 0) {
      const { stdout } = await git(
        root,
        '--git-dir',
        remote,
        'log',
        '--stat',
        '--format=%ncommit %h on %D%nAuthor: %an <%ae>%n%n    %s%n',
        '--branches=patchbay/*',
        '-n',
        '1',
      );
      process.stdout.write(`\nThe remote now has:\n${stdout}`);
    }
    return code;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

async function makeRepo(root: string, remote: string): Promise<void> {
  const work = join(root, 'work');
  await git(root, 'init', '--quiet', '--bare', '--initial-branch=main', remote);
  await git(root, 'init', '--quiet', '--initial-branch=main', work);
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the demo repository's own JavaScript source.
  await writeFile(join(work, 'app.js'), 'export function greet(name) {\n  return `Hello, ${name}!`;\n}\n');
  await writeFile(join(work, 'package.json'), '{ "name": "greeter", "type": "module", "version": "1.0.0" }\n');
  // A check the harness reads from CI configuration and runs on the pushed commit (a shell script,
  // so the demo needs no toolchain inside the sandbox).
  await writeFile(
    join(work, 'test.sh'),
    "#!/bin/sh\ngrep -q 'export function greet' app.js && echo 'greet() is exported'\n",
    { mode: 0o755 },
  );
  await mkdir(join(work, '.github', 'workflows'), { recursive: true });
  await writeFile(
    join(work, '.github', 'workflows', 'ci.yml'),
    'on: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - name: Run tests\n        run: ./test.sh\n',
  );
  await git(work, 'add', '.');
  await git(
    work,
    '-c',
    'user.name=Demo',
    '-c',
    'user.email=demo@example.com',
    'commit',
    '--quiet',
    '-m',
    'Initial commit',
  );
  await git(work, 'push', '--quiet', remote, 'main');
}

function git(cwd: string, ...args: string[]) {
  return run('git', args, {
    cwd,
    env: {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: cwd,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_ALLOW_PROTOCOL: 'file',
    },
  });
}
