import { createHash } from 'node:crypto';
import type { Sandbox } from '../../../sandbox/sandbox.ts';
import { PatchbayError } from '../../core/errors.ts';
import type { KnownCommand } from '../knowledge/knowledge-document.ts';

/**
 * Where checks run: a clone of the workspace's repository checked out at exactly the judged commit,
 * inside the workspace's `.git` (the only place a sandbox keeps between commands) so `git status`
 * of the agent's tree never sees it. A clone, not a worktree: it has refs of its own and no remote,
 * so a check that commits, resets or rewrites files moves nothing the harness pushes.
 */
export const checkoutDir = '.git/patchbay-check';
/** Setup outputs of the checkout (node_modules, virtualenvs), kept between rounds under their key. */
const setupCacheDir = '.git/patchbay-setup';
/**
 * The agent's untracked and ignored entries at the workspace root, moved here while checks run:
 * lookups that walk up from the checkout (Node's node_modules, Python's and tools' config) would
 * otherwise find the agent's own `node_modules` and pass a check the commit alone fails.
 */
const asideDir = '.git/patchbay-aside';
/** Marker of the agent workspace's own setup: the key it ran for. */
export const workspaceSetupMarker = '.git/patchbay-setup-key';

/** Files whose content decides what setup produces: a change to one of them runs setup again. */
export const setupInputs = [
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'pnpm-lock.yaml',
  'yarn.lock',
  'bun.lockb',
  'requirements.txt',
  'requirements-dev.txt',
  'pyproject.toml',
  'poetry.lock',
  'uv.lock',
  'Pipfile.lock',
  'Cargo.lock',
  'go.sum',
  'Gemfile.lock',
  'composer.lock',
];

const gitTimeoutMs = 120_000;

export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The key setup output is cached under at `commit`: the setup commands and the blob ids of the
 * files they read (lockfiles, manifests). Same key, same output; anything else runs setup again.
 */
export async function setupKey(
  sandbox: Sandbox,
  commit: string,
  setup: readonly KnownCommand[],
  signal: AbortSignal,
): Promise<string> {
  const listed = await sandbox.exec(`git ls-tree ${commit} -- ${setupInputs.map(shellQuote).join(' ')}`, {
    signal,
    timeoutMs: gitTimeoutMs,
  });
  if (listed.exitCode !== 0)
    throw new PatchbayError(
      'git_failed',
      `could not list the setup inputs of ${commit.slice(0, 12)}: ${listed.stderr.trim().slice(0, 500)}`,
    );
  return createHash('sha256')
    .update(JSON.stringify(setup.map((c) => c.command)))
    .update('\0')
    .update(listed.stdout)
    .digest('hex')
    .slice(0, 32);
}

export type CommitCheckout = {
  /** Path of the checkout relative to the workspace root. */
  dir: string;
  commit: string;
  /** Runs `command` in the checkout (through `sh -c`, with the command passed in the environment). */
  exec(
    command: string,
    options: { timeoutMs: number; signal: AbortSignal; maxOutputBytes?: number },
  ): ReturnType<Sandbox['exec']>;
  /** Moves the setup output cached under `key` into the checkout; false when there is none. */
  restoreSetup(key: string): Promise<boolean>;
  /** Remembers what setup left in the checkout (untracked and ignored paths) as the output of `key`. */
  noteSetupOutput(key: string): Promise<void>;
  /** Keeps the setup output for the next round, puts the agent's entries back and removes the checkout. Never throws. */
  close(): Promise<void>;
};

/** Puts back what an earlier, interrupted round moved aside (a crash between moving and restoring). */
const restoreAsideScript = `if [ -d ${asideDir} ]; then
  for entry in ${asideDir}/* ${asideDir}/.[!.]* ${asideDir}/..?*; do
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    name=\${entry#${asideDir}/}
    if [ -e "$name" ] || [ -L "$name" ]; then rm -rf "$entry"; else mv "$entry" "$name"; fi
  done
  rmdir ${asideDir} 2>/dev/null || rm -rf ${asideDir}
fi`;

/**
 * A fresh checkout of exactly `commit` from the workspace's own object store: nothing of the
 * agent's tree (gitignored files, files hidden by .git/info/exclude, setup output the agent changed)
 * is in it. The caller closes it.
 */
export async function openCommitCheckout(
  sandbox: Sandbox,
  commit: string,
  signal: AbortSignal,
): Promise<CommitCheckout> {
  if (!/^[0-9a-f]{40,64}$/.test(commit))
    throw new PatchbayError('invalid_input', `not a commit id: ${JSON.stringify(commit)}`);
  const script = `set -eu
${restoreAsideScript}
rm -rf ${checkoutDir}
git -c core.hooksPath=/dev/null clone --quiet --no-checkout --shared --no-tags . ${checkoutDir}
cd ${checkoutDir}
git remote remove origin
git -c core.hooksPath=/dev/null -c advice.detachedHead=false checkout --quiet --detach "$PATCHBAY_COMMIT"
test "$(git rev-parse --verify HEAD)" = "$PATCHBAY_COMMIT"
cd ../..
mkdir -p ${asideDir}
git ls-files --others --directory -z | tr '\\0' '\\n' | while IFS= read -r path; do
  case "$path" in */?*) continue ;; esac
  name=\${path%/}
  [ -n "$name" ] && mv "$name" ${asideDir}/ || true
done
`;
  const opened = await sandbox.exec(script, { signal, timeoutMs: gitTimeoutMs, env: { PATCHBAY_COMMIT: commit } });
  if (opened.exitCode !== 0) {
    await sandbox
      .exec(`${restoreAsideScript}\nrm -rf ${checkoutDir}`, { signal, timeoutMs: gitTimeoutMs })
      .catch(() => undefined);
    throw new PatchbayError(
      'git_failed',
      `could not check out ${commit.slice(0, 12)} for the checks: ${(opened.stderr || opened.stdout).trim().slice(-1000)}`,
    );
  }
  let outputKey: string | undefined;
  const cacheOf = (key: string) => `${setupCacheDir}/${key}`;

  return {
    dir: checkoutDir,
    commit,
    exec(command, options) {
      return sandbox.exec(`cd ${checkoutDir} && exec sh -c "$PATCHBAY_COMMAND"`, {
        ...options,
        env: { PATCHBAY_COMMAND: command },
      });
    },
    async restoreSetup(key) {
      const cache = cacheOf(key);
      const listed = await sandbox.exec(`test -f ${cache}/.complete && cat ${cache}/.paths`, {
        signal,
        timeoutMs: gitTimeoutMs,
      });
      if (listed.exitCode !== 0) return false;
      const paths = listed.stdout
        .split('\0')
        .filter(Boolean)
        .map((p) => p.replace(/\/$/, ''));
      // Not complete while it is in the checkout: a round that dies now leaves no half cache behind.
      const moves = paths.map(
        (p) =>
          `mkdir -p ${shellQuote(dirOf(`${checkoutDir}/${p}`))} && mv ${shellQuote(`${cache}/${p}`)} ${shellQuote(`${checkoutDir}/${p}`)}`,
      );
      const moved = await sandbox.exec(['set -eu', `rm -f ${cache}/.complete`, ...moves].join('\n'), {
        signal,
        timeoutMs: gitTimeoutMs,
      });
      if (moved.exitCode !== 0) return false;
      outputKey = key;
      return true;
    },
    async noteSetupOutput(key) {
      const cache = cacheOf(key);
      const noted = await sandbox.exec(
        `set -eu\nrm -rf ${cache}\nmkdir -p ${cache}\n(cd ${checkoutDir} && git ls-files --others --directory -z) > ${cache}/.paths`,
        { signal, timeoutMs: gitTimeoutMs },
      );
      if (noted.exitCode === 0) outputKey = key;
    },
    async close() {
      const steps: string[] = [];
      if (outputKey) {
        const cache = cacheOf(outputKey);
        const listed = await sandbox
          .exec(`cat ${cache}/.paths`, { signal, timeoutMs: gitTimeoutMs })
          .catch(() => undefined);
        const paths =
          listed?.exitCode === 0
            ? listed.stdout
                .split('\0')
                .filter(Boolean)
                .map((p) => p.replace(/\/$/, ''))
            : [];
        steps.push(
          ...paths.map(
            (p) =>
              `mkdir -p ${shellQuote(dirOf(`${cache}/${p}`))} && mv ${shellQuote(`${checkoutDir}/${p}`)} ${shellQuote(`${cache}/${p}`)}`,
          ),
        );
        steps.push(`touch ${cache}/.complete`);
      }
      // The cache is kept only when every output made it back (`&&` chain); the tree goes either way.
      const keep = steps.length
        ? `(set -e; ${steps.join('; ')}) || rm -rf ${outputKey ? cacheOf(outputKey) : '/nonexistent'}`
        : 'true';
      await sandbox
        .exec(`${keep}\n${restoreAsideScript}\nrm -rf ${checkoutDir}`, { timeoutMs: gitTimeoutMs })
        .catch(() => undefined);
    },
  };
}

function dirOf(path: string): string {
  const trimmed = path.replace(/\/$/, '');
  const slash = trimmed.lastIndexOf('/');
  return slash > 0 ? trimmed.slice(0, slash) : '.';
}
