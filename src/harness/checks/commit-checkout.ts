import { createHash } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import type { Sandbox } from '../../../sandbox/sandbox.ts';
import { PatchbayError } from '../../core/errors.ts';
import type { EvidenceRepo } from '../../git/evidence-repo.ts';
import type { KnownCommand } from '../knowledge/knowledge-document.ts';

/**
 * Where checks run: a sandbox of their own (not the agent's), whose workspace holds only a checkout
 * of exactly the judged commit, made from the host's evidence repository, and the setup cache. No
 * path the agent can write is in it or above it: Node's node_modules lookup, ESLint's, Babel's and
 * Jest's config lookups, `.npmrc` and `conftest.py` all walk up into directories the harness made.
 */
export const checkoutDir = 'checkout';
/** Setup outputs of the checkout (node_modules, virtualenvs), kept between rounds under their key. */
const setupCacheDir = 'setup';
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

/** The `git ls-tree` arguments listing `commit`'s setup inputs. */
export const setupInputsListing = (commit: string) => ['ls-tree', commit, '--', ...setupInputs];

/**
 * The key setup output is cached under: the setup commands and the listing of the files they read
 * (lockfiles, manifests: their blob ids). Same key, same output; anything else runs setup again.
 */
export function setupKeyOf(listing: string, setup: readonly KnownCommand[]): string {
  return createHash('sha256')
    .update(JSON.stringify(setup.map((c) => c.command)))
    .update('\0')
    .update(listing)
    .digest('hex')
    .slice(0, 32);
}

export type CommitCheckout = {
  /** Path of the checkout relative to the check sandbox's workspace root. */
  dir: string;
  commit: string;
  /** Runs `command` in the checkout (through `sh -c`, with the command passed in the environment). */
  exec(
    command: string,
    options: { timeoutMs: number; signal: AbortSignal; maxOutputBytes?: number },
  ): ReturnType<Sandbox['exec']>;
  /**
   * Moves the setup output cached under `key` into the checkout; false when there is none or it is
   * not byte for byte what setup made (its digest, kept on the host, differs): then it is removed.
   */
  restoreSetup(key: string): Promise<boolean>;
  /** Remembers what setup left in the checkout (untracked and ignored paths) as the output of `key`, with its digest. */
  noteSetupOutput(key: string): Promise<void>;
  /** Keeps the setup output for the next round and removes the checkout. Never throws. */
  close(): Promise<void>;
};

/** Digests of setup outputs, taken on the host's word when setup made them: key → digest. */
export type SetupDigests = Map<string, string>;

// The check sandbox's workspace is emptied but for the cache of this key: whatever an earlier
// round's checks left (a node_modules at the root, a conftest.py, other keys' caches) goes. With no
// key (no setup) PATCHBAY_KEEP is empty, which no name matches: the whole of setup/ goes.
const emptyScript = `set -eu
find . -mindepth 1 -maxdepth 1 ! -name ${setupCacheDir} -exec rm -rf {} +
if [ -d ${setupCacheDir} ]; then find ${setupCacheDir} -mindepth 1 -maxdepth 1 ! -name "$PATCHBAY_KEEP" -exec rm -rf {} +; fi
`;

const cloneScript = `set -eu
if [ -n "\${PATCHBAY_BUNDLE_BASE64:-}" ]; then printf '%s' "$PATCHBAY_BUNDLE_BASE64" | base64 -d > judged.bundle; fi
git init --quiet --template= ${checkoutDir}
if [ -n "\${PATCHBAY_ALTERNATES:-}" ]; then
  mkdir -p ${checkoutDir}/.git/objects/info
  printf '%s\\n' "$PATCHBAY_ALTERNATES" > ${checkoutDir}/.git/objects/info/alternates
fi
git -C ${checkoutDir} -c core.hooksPath=/dev/null fetch --quiet --no-tags ../judged.bundle refs/patchbay/judged:refs/patchbay/judged
rm -f judged.bundle
git -C ${checkoutDir} -c core.hooksPath=/dev/null -c advice.detachedHead=false checkout --quiet --detach "$PATCHBAY_COMMIT"
test "$(git -C ${checkoutDir} rev-parse --verify HEAD)" = "$PATCHBAY_COMMIT"
`;

/** sha256 of a setup output: its list of paths, then a tar of them with times and owners fixed. */
const digestCommand = (paths: string) =>
  `cd ${checkoutDir} && { cat ${paths}; tar --null -T ${paths} --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - 2>/dev/null; } | sha256sum | cut -c1-64`;

export type OpenCheckoutOptions = {
  /** The checks' own sandbox; the caller acquired it and releases it. */
  sandbox: Sandbox;
  evidence: EvidenceRepo;
  /** The sandbox shows the mirror's objects at this path: a thin bundle of the change is enough. */
  sharedObjects?: string | undefined;
  /** The setup key whose cache this round may reuse; every other cache is removed. */
  key?: string | undefined;
  digests: SetupDigests;
  signal: AbortSignal;
};

/**
 * A fresh checkout of exactly the judged commit in the checks' sandbox, from a bundle the host made
 * in its evidence repository: nothing of the agent's workspace (its tree, its `.git`, its setup
 * output) is in it or above it. The caller closes it.
 */
export async function openCommitCheckout(options: OpenCheckoutOptions): Promise<CommitCheckout> {
  const { sandbox, evidence, signal, digests } = options;
  const commit = evidence.commit;
  const run = (script: string, env: Record<string, string> = {}) =>
    sandbox.exec(script, { signal, timeoutMs: gitTimeoutMs, env });
  const fail = (what: string, r: { stderr: string; stdout: string }): never => {
    throw new PatchbayError(
      'git_failed',
      `could not ${what} ${commit.slice(0, 12)} for the checks: ${(r.stderr || r.stdout).trim().slice(-1000)}`,
    );
  };
  const emptied = await run(emptyScript, { PATCHBAY_KEEP: options.key ?? '' });
  if (emptied.exitCode !== 0) fail('prepare a checkout of', emptied);
  const bundle = await evidence.bundle({ thin: options.sharedObjects !== undefined, signal });
  try {
    const bytes = await readFile(bundle);
    // The script's own variables, not settings: the bundle travels in one when the sandbox cannot take bytes.
    if (sandbox.putBytes) await sandbox.putBytes(`${sandbox.workdir}/judged.bundle`, bytes);
    const cloned = await run(cloneScript, {
      PATCHBAY_COMMIT: commit,
      PATCHBAY_ALTERNATES: options.sharedObjects ?? '',
      ...(!sandbox.putBytes && { PATCHBAY_BUNDLE_BASE64: bytes.toString('base64') }),
    });
    if (cloned.exitCode !== 0) fail('check out', cloned);
  } finally {
    await rm(bundle, { force: true });
  }
  return checkoutHandle(sandbox, commit, digests, signal);
}

function checkoutHandle(sandbox: Sandbox, commit: string, digests: SetupDigests, signal: AbortSignal): CommitCheckout {
  let outputKey: string | undefined;
  const cacheOf = (key: string) => `${setupCacheDir}/${key}`;
  const run = (script: string) => sandbox.exec(script, { signal, timeoutMs: gitTimeoutMs });
  const pathsOf = async (key: string): Promise<string[] | undefined> => {
    const listed = await run(`cat ${cacheOf(key)}/.paths`).catch(() => undefined);
    if (listed?.exitCode !== 0) return undefined;
    return listed.stdout
      .split('\0')
      .filter(Boolean)
      .map((p) => p.replace(/\/$/, ''));
  };
  const digest = async (key: string) => {
    const r = await run(digestCommand(`../${cacheOf(key)}/.paths`));
    return r.exitCode === 0 ? r.stdout.trim() : undefined;
  };
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
      const expected = digests.get(key);
      const complete = await run(`test -f ${cacheOf(key)}/.complete`);
      const paths = expected && complete.exitCode === 0 ? await pathsOf(key) : undefined;
      if (!paths) {
        await run(`rm -rf ${cacheOf(key)}`);
        return false;
      }
      // Not complete while it is in the checkout: a round that dies now leaves no half cache behind.
      const moves = paths.map(
        (p) =>
          `mkdir -p ${shellQuote(dirOf(`${checkoutDir}/${p}`))} && mv ${shellQuote(`${cacheOf(key)}/${p}`)} ${shellQuote(`${checkoutDir}/${p}`)}`,
      );
      const moved = await run(['set -eu', `rm -f ${cacheOf(key)}/.complete`, ...moves].join('\n'));
      if (moved.exitCode === 0 && (await digest(key)) === expected) {
        // The digest covers what moved into the checkout; anything else an earlier round's checks put
        // in the cache's folder (beside the checkout, where a test could read it) goes.
        const cleared = await run(`find ${cacheOf(key)} -mindepth 1 -maxdepth 1 ! -name .paths -exec rm -rf {} +`);
        if (cleared.exitCode === 0) {
          outputKey = key;
          return true;
        }
      }
      // Changed since setup made it (a check of an earlier round may write anywhere it runs): gone.
      digests.delete(key);
      await run(
        [...paths.map((p) => `rm -rf ${shellQuote(`${checkoutDir}/${p}`)}`), `rm -rf ${cacheOf(key)}`].join('\n'),
      );
      return false;
    },
    async noteSetupOutput(key) {
      const cache = cacheOf(key);
      const noted = await run(
        `set -eu\nrm -rf ${cache}\nmkdir -p ${cache}\n(cd ${checkoutDir} && git ls-files --others --directory -z) > ${cache}/.paths`,
      );
      const made = noted.exitCode === 0 ? await digest(key) : undefined;
      if (!made) return;
      digests.set(key, made);
      outputKey = key;
    },
    close: () => closeCheckout(sandbox, outputKey && { cache: cacheOf(outputKey), paths: pathsOf(outputKey) }),
  };
}

async function closeCheckout(
  sandbox: Sandbox,
  output: { cache: string; paths: Promise<string[] | undefined> } | undefined | '',
): Promise<void> {
  const steps: string[] = [];
  if (output) {
    const paths = (await output.paths) ?? [];
    steps.push(
      ...paths.map(
        (p) =>
          `mkdir -p ${shellQuote(dirOf(`${output.cache}/${p}`))} && mv ${shellQuote(`${checkoutDir}/${p}`)} ${shellQuote(`${output.cache}/${p}`)}`,
      ),
      `touch ${output.cache}/.complete`,
    );
  }
  // The cache is kept only when every output made it back (`&&` chain); the tree goes either way.
  const keep = steps.length && output ? `(set -e; ${steps.join('; ')}) || rm -rf ${output.cache}` : 'true';
  await sandbox.exec(`${keep}\nrm -rf ${checkoutDir}`, { timeoutMs: gitTimeoutMs }).catch(() => undefined);
}

function dirOf(path: string): string {
  const trimmed = path.replace(/\/$/, '');
  const slash = trimmed.lastIndexOf('/');
  return slash > 0 ? trimmed.slice(0, slash) : '.';
}
