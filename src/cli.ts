#!/usr/bin/env node
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync } from 'node:fs';
import { enableCompileCache } from 'node:module';
import { tmpdir, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { releaseExitHooks } from '../db/embedded-postgres.ts';
import { parseArgs } from 'node:util';
import type { Actor } from './core/actor.ts';
import { isPatchbayError, PatchbayError } from './core/errors.ts';
import { configuredSecrets, loadConfig, type Config } from './config.ts';
import { createLogger } from './logger.ts';
import { repeatedSignals } from './cli/repeated-signals.ts';
import { loadEnvFile } from './cli/env-file.ts';

const usage = `Patchbay: a self-hostable chat-ops coding agent.

Usage:
  patchbay serve                               start the HTTP API, web page, webhooks and worker
  patchbay api                                 only the HTTP API, web page, webhooks and thread replies
                                               (no runs); needs DATABASE_URL
  patchbay worker                              only take runs from the queue (no HTTP); needs DATABASE_URL
  patchbay run --repo <url|path> [--base <branch>] "<task>"
                                               run one task here and stream its progress
  patchbay demo                                run a scripted session on a temporary repo (no keys needed)
  patchbay eval [--model <provider[:model]>]... [--verifier <provider[:model]>] [--suite <dir>] [--json <file>]
                                               run a suite of tasks with hidden tests and compare models,
                                               each judged by --verifier (else by itself)
                                               (see docs/eval.md)
  patchbay doctor                              check the configuration and every configured service
  patchbay engines codex-login | codex-import <auth.json> | codex-logout | codex-status
                                               the ChatGPT sign-in Codex uses with CODEX_AUTH=chatgpt
  patchbay help

Configuration comes from the environment, and from .env in the working directory (or the file
PATCHBAY_ENV_FILE names) for what the environment does not set; see docs/configuration.md.`;

/**
 * V8's compile cache for the modules loaded from here on (the composition root and everything it
 * pulls in, loaded lazily below for that reason). Loading them was most of a restart: about 3.5 s
 * on a busy host, 1.5 s from the cache, before a restarted server could take its runs back. The
 * cache is per user in the temp directory (so test servers with their own DATA_DIR share it), used
 * only when that directory is this user's alone; NODE_COMPILE_CACHE, when set, wins.
 */
function useCompileCache(): void {
  if (process.env.NODE_COMPILE_CACHE || process.env.NODE_DISABLE_COMPILE_CACHE) return;
  const { uid } = userInfo();
  const dir = join(tmpdir(), `patchbay-compile-cache-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700, recursive: true });
    const info = lstatSync(dir);
    if (!info.isDirectory() || info.uid !== uid || (info.mode & 0o077) !== 0) return;
    enableCompileCache(dir);
  } catch {
    // A cache is an optimisation: without one, modules load as before.
  }
}

async function main(argv: string[]): Promise<number> {
  // Before anything reads a setting: .env (or PATCHBAY_ENV_FILE) under the real environment.
  loadEnvFile(process.env, process.cwd());
  useCompileCache();
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(loadConfig(process.env), 'serve');
    case 'api':
    case 'worker':
      return serve(loadConfig(process.env), command);
    case 'run': {
      const { values, positionals } = parseArgs({
        args: rest,
        options: { repo: { type: 'string' }, base: { type: 'string' } },
        allowPositionals: true,
      });
      const task = positionals.join(' ').trim();
      if (!values.repo || !task) {
        process.stderr.write(`patchbay run needs --repo and a task.\n\n${usage}\n`);
        return 2;
      }
      const { runTask } = await import('./cli/run-task.ts');
      // runTask stops the session on these and closes in order; the package would exit mid-run.
      releaseExitHooks(['SIGINT', 'SIGTERM', 'SIGHUP']);
      return runTask({
        config: loadConfig(process.env),
        repo: values.repo,
        task,
        baseBranch: values.base,
        actor: localActor(),
      });
    }
    case 'doctor': {
      const { runDoctor } = await import('./cli/doctor.ts');
      // The checks' own SDK logs stay out of the table unless LOG_LEVEL asks for them.
      return runDoctor({
        env: process.env,
        log: createLogger(process.env.LOG_LEVEL || 'silent', process.stderr),
        out: process.stdout,
      });
    }
    case 'demo': {
      const { runDemo } = await import('./cli/demo.ts');
      releaseExitHooks(['SIGINT', 'SIGTERM', 'SIGHUP']);
      return runDemo({ config: loadConfig(process.env), actor: localActor() });
    }
    case 'eval':
      return evalCommand(rest);
    case 'engines':
      return enginesCommand(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${usage}\n`);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`Unknown command "${command}".\n\n${usage}\n`);
      return 2;
  }
}

/** `patchbay engines …`: the ChatGPT sign-in for Codex (docs/engines.md). */
async function enginesCommand(args: string[]): Promise<number> {
  const [action, file, ...extra] = args;
  const { runSignInCommand } = await import('./cli/codex-signin-cli.ts');
  type Command = Parameters<typeof runSignInCommand>[0];
  const command: Command | undefined =
    action === 'codex-import' && file && extra.length === 0
      ? { action, file }
      : (action === 'codex-login' || action === 'codex-logout' || action === 'codex-status') && !file
        ? { action }
        : undefined;
  if (!command) {
    process.stderr.write(
      `patchbay engines takes codex-login, codex-import <auth.json>, codex-logout or codex-status.\n\n${usage}\n`,
    );
    return 2;
  }
  return runSignInCommand(command, {
    config: loadConfig(process.env),
    log: createLogger(process.env.LOG_LEVEL || 'silent', process.stderr),
    out: process.stdout,
  });
}

/** `patchbay eval`: each `--model` selects MODEL_PROVIDER and MODEL over the environment; none: the configured model. */
async function evalCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      model: { type: 'string', multiple: true },
      verifier: { type: 'string' },
      suite: { type: 'string' },
      json: { type: 'string' },
    },
    allowPositionals: true,
  });
  if (positionals.length > 0) {
    process.stderr.write(
      `patchbay eval takes no task text (the suite holds the tasks); got "${positionals.join(' ')}".\n\n${usage}\n`,
    );
    return 2;
  }
  const { parseModelSpec, modelEnv, specLabel } = await import('./cli/eval/model-spec.ts');
  const { runEval } = await import('./cli/eval/run-eval.ts');
  const specs = (values.model ?? []).map((text) => parseModelSpec(text));
  const models = specs.length
    ? specs.map((spec) => ({
        label: specLabel(spec),
        config: loadConfig(modelEnv(process.env, spec)),
      }))
    : [
        {
          label: process.env.MODEL
            ? `${process.env.MODEL_PROVIDER ?? 'scripted'}:${process.env.MODEL}`
            : (process.env.MODEL_PROVIDER ?? 'scripted'),
          config: loadConfig(process.env),
        },
      ];
  const judge = values.verifier ? parseModelSpec(values.verifier, '--verifier') : undefined;
  const verifier = judge && { label: specLabel(judge), config: loadConfig(modelEnv(process.env, judge)) };
  const config = models[0]!.config;
  return runEval({
    signal: stopOnSignal(),
    models,
    verifier,
    suiteDir: values.suite ? resolve(values.suite) : fileURLToPath(new URL('../eval/tasks', import.meta.url)),
    ...(values.json && { jsonPath: resolve(values.json) }),
    actor: localActor(),
    log: createLogger(process.env.LOG_LEVEL ?? 'warn', process.stderr, configuredSecrets(config)),
    out: process.stdout,
  });
}

/**
 * The first Ctrl-C (or SIGTERM, SIGHUP) stops the running task and prints the figures so far;
 * a second one exits at once. embedded-postgres would otherwise exit mid-task.
 */
function stopOnSignal(): AbortSignal {
  const stop = new AbortController();
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  releaseExitHooks(signals);
  const again = repeatedSignals();
  for (const signal of signals) {
    process.on(signal, () => {
      const seen = again(signal);
      if (seen === 'echo') return;
      if (seen === 'again') {
        process.stderr.write(`patchbay: ${signal} again; exiting without the figures\n`);
        process.exit(130);
      }
      process.stderr.write(
        'patchbay: stopping the running task; the figures so far follow (send the signal again to exit at once)\n',
      );
      stop.abort();
    });
  }
  return stop.signal;
}

/**
 * `serve` is the whole of Patchbay in one process. `api` and `worker` are its two halves, for many
 * processes (on many hosts) sharing one PostgreSQL: the queue hands each run to one worker, and
 * events reach every API process through the database's NOTIFY.
 */
async function serve(config: Config, role: 'serve' | 'api' | 'worker'): Promise<number> {
  if (role !== 'serve' && !config.databaseUrl) {
    throw new PatchbayError(
      'config_invalid',
      `patchbay ${role} needs DATABASE_URL: its processes share one PostgreSQL server (the embedded database belongs to a single process; use patchbay serve for that)`,
    );
  }
  const log = createLogger(config.logLevel, process.stdout, configuredSecrets(config)).child({ role });
  // Loaded before the signals are owned: embedded-postgres hooks SIGINT/SIGTERM when it loads.
  const { startPatchbay } = await import('./main.ts');
  const { buildIntegrations } = await import('./wire-integrations.ts');
  const stopRequested = ownShutdownSignals(log);
  const app = await startPatchbay(config, {
    log,
    serve: role !== 'worker',
    work: role !== 'api',
    conversations: role !== 'worker',
    integrations: (context) => buildIntegrations(config, context),
  });
  log.info(
    {
      ...(app.url && { url: app.url, publicUrl: config.publicUrl }),
      ...(app.healthUrl && { health: `${app.healthUrl}/healthz` }),
      ...(app.sandboxes && {
        model: `${app.model.name}/${app.model.model}`,
        sandbox: app.sandboxes.kind,
        concurrency: config.worker.concurrency,
      }),
    },
    'Patchbay is up',
  );
  const lost = await Promise.race([stopRequested.then(() => undefined), app.lost]);
  if (lost) {
    // One clear line, and a non-zero exit so a supervisor starts the server again.
    process.stderr.write(`patchbay: ${lost.message}; exiting\n`);
    await app.close();
    return 1;
  }
  await app.close();
  log.info('Patchbay stopped');
  return 0;
}

/**
 * The server owns its shutdown. embedded-postgres hooks SIGINT/SIGTERM/SIGHUP to stop its
 * database and exit the process while Patchbay is still closing (runs cut mid-call, pg clients
 * erroring): those hooks are removed, and the first signal starts an orderly close instead
 * (stop taking work, grace for running steps, hand the rest back, close queue, bus and pool, then
 * the database). A second signal exits at once, still with 0: the person asked for it, and the
 * embedded database stops on its own when its lifeline to this process closes (embedded-postmaster.ts).
 * The package's 'exit' hook stays as a last resort.
 */
function ownShutdownSignals(log: ReturnType<typeof createLogger>): Promise<void> {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  return new Promise((resolve) => {
    const again = repeatedSignals();
    releaseExitHooks(signals);
    for (const signal of signals) {
      process.on(signal, () => {
        const seen = again(signal);
        if (seen === 'echo') return;
        if (seen === 'again') {
          process.stderr.write(`patchbay: ${signal} again; exiting without finishing the shutdown\n`);
          process.exit(0);
        }
        log.info({ signal }, 'shutting down; send the signal again to exit at once');
        resolve();
      });
    }
  });
}

/** Who is asking, for the commit author: git's user settings, else the OS account. */
function localActor(): Actor {
  const gitConfig = (key: string) => {
    try {
      // Like every git Patchbay runs on the host: no transport helpers (this one needs none at all).
      return (
        execFileSync('git', ['config', '--get', key], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
          env: { ...process.env, GIT_ALLOW_PROTOCOL: 'file' },
        }).trim() || undefined
      );
    } catch {
      return undefined;
    }
  };
  const account = userInfo().username;
  const email = gitConfig('user.email');
  return {
    source: 'cli',
    id: account,
    name: gitConfig('user.name') ?? account,
    ...(email?.includes('@') && { email }),
  };
}

// Exit explicitly, once stdout has drained: embedded-postgres installs exit hooks that would
// otherwise turn every ending into exit code 0.
const exit = (code: number) => process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));

main(process.argv.slice(2)).then(exit, (error: unknown) => {
  // Known problems (bad configuration, no bubblewrap, unreachable database) get one clear line.
  process.stderr.write(
    isPatchbayError(error) ? `patchbay: ${error.message}\n` : `patchbay: ${(error as Error)?.stack ?? String(error)}\n`,
  );
  exit(1);
});
