import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { PatchbayError } from '../../src/core/errors.ts';
import type { FileEntry } from '../sandbox.ts';
import { toWorkspaceRelative } from '../workspace-path.ts';
import { DEFAULT_LIST_LIMIT, MAX_READ_BYTES } from '../workspace-files.ts';
import type { ModalExecOutput } from './modal-exec.ts';

/** Runs argv in the sandbox (no shell of ours around it) with optional stdin. */
export type RunInSandbox = (
  args: string[],
  options: { stdin?: Uint8Array; maxOutputBytes: number; timeoutMs?: number },
) => Promise<ModalExecOutput>;

// Exit codes the scripts use to say why they refused.
const NOT_FOUND = 90;
const OUTSIDE = 91;
const NOT_REGULAR = 92;
const TOO_BIG = 93;
const IS_DIR = 94;
const NOT_DIR_PARENT = 95;
const NOT_DIR = 96;

// Every path is checked lexically on the host first, then by its real path inside the sandbox, so
// `..` and symlinks that point out of the workspace are refused the way the local sandbox does.
const inside = (root: string) => `case "$r" in ${root}|${root}/*) ;; *) exit ${OUTSIDE};; esac`;
const readScript = (root: string) => `r=$(realpath -e -- "$1" 2>/dev/null) || exit ${NOT_FOUND}
${inside(root)}
[ -d "$r" ] && exit ${IS_DIR}
[ -f "$r" ] || exit ${NOT_REGULAR}
[ "$(stat -c %s -- "$r")" -le ${MAX_READ_BYTES} ] || exit ${TOO_BIG}
exec cat -- "$r"`;
const writeScript = (root: string) => `d=$(dirname -- "$1")
if [ ! -e "$d" ]; then r=$(realpath -m -- "$d"); ${inside(root)}; mkdir -p -- "$d" 2>/dev/null || exit ${NOT_DIR_PARENT}; fi
r=$(realpath -e -- "$d" 2>/dev/null) || exit ${NOT_DIR_PARENT}
${inside(root)}
[ -d "$r" ] || exit ${NOT_DIR_PARENT}
if [ -L "$1" ]; then r=$(realpath -m -- "$1"); ${inside(root)}; fi
[ -d "$1" ] && exit ${IS_DIR}
if [ -e "$1" ] && [ ! -f "$1" ]; then exit ${NOT_REGULAR}; fi
exec cat > "$1"`;
const listScript = (root: string) => `r=$(realpath -e -- "$1" 2>/dev/null) || exit ${NOT_FOUND}
${inside(root)}
if [ ! -d "$r" ]; then printf '%s\\t%s\\t%s\\0' f "$(stat -c %s -- "$r")" "$r"; exit 0; fi
depth=""; [ "$2" = 1 ] || depth="-maxdepth 1"
find "$r" -mindepth 1 $depth \\( -name .git -prune -printf '%y\\t%s\\t%p\\0' \\) -o -printf '%y\\t%s\\t%p\\0' | head -z -n "$3"`;

/** Prints `patchbay-digest <size> <sha256>` for the file "$1" (coreutils' stat and sha256sum). */
const digestLine = `printf 'patchbay-digest %s %s\\n' "$(stat -c %s -- "$1")" "$(sha256sum < "$1" | cut -d' ' -f1)"`;

function parseDigest(output: Uint8Array): { size: number; sha256: string } | undefined {
  const match = /^patchbay-digest (\d+) ([0-9a-f]{64})$/m.exec(Buffer.from(output).toString('utf8'));
  return match ? { size: Number(match[1]), sha256: match[2]! } : undefined;
}

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

/** Where file operations run: the sandbox's command runner and the workspace directory. */
type FilesTarget = { run: RunInSandbox; workdir: string };

/** The file operations of a Modal sandbox, each one command whose script refuses what the local sandbox refuses. */
export type ModalFiles = ReturnType<typeof createModalFiles>;

/** Files in and out of a Modal sandbox through `run`: workspace files by relative path, bytes by absolute path. */
export function createModalFiles(run: RunInSandbox, workdir: string) {
  const target: FilesTarget = { run, workdir };
  return {
    readFile: (input: string) => readFile(target, input),
    writeFile: (input: string, content: string) => writeFile(target, input, content),
    listFiles: (input: string, options?: { recursive?: boolean; limit?: number }) => listFiles(target, input, options),
    /** The absolute path of a directory in the workspace, for a command's working directory. */
    resolveDir: (input: string) => resolveDir(target, input),
    putBytes: (path: string, data: Uint8Array) => putBytes(run, path, data),
    getBytes: (path: string, maxBytes: number) => getBytes(run, path, maxBytes),
  };
}

function absolute(input: string, workdir: string): string {
  const rel = toWorkspaceRelative(input, workdir);
  return rel === '.' ? workdir : posix.join(workdir, rel);
}

/** The error for a script's refusal (its exit code), in the words the local sandbox uses. */
function refused(input: string, code: number | null, stderr: Uint8Array, what: string): never {
  switch (code) {
    case NOT_FOUND:
      throw new PatchbayError('not_found', `${input}: no such file or directory in the workspace`);
    case OUTSIDE:
      throw new PatchbayError(
        'path_refused',
        `path refused: ${JSON.stringify(input)} resolves outside the workspace through a symlink`,
      );
    case NOT_REGULAR:
      throw new PatchbayError('invalid_input', `${input}: is not a regular file; only regular files can be ${what}`);
    case TOO_BIG:
      throw new PatchbayError(
        'invalid_input',
        `${input}: is over the ${MAX_READ_BYTES / 1024 ** 2} MiB a read returns; read parts of it with a command (head, sed -n, grep)`,
      );
    case IS_DIR:
      throw new PatchbayError('invalid_input', `${input}: is a directory`);
    case NOT_DIR_PARENT:
      throw new PatchbayError('invalid_input', `${input}: a parent is not a directory`);
    default:
      throw new PatchbayError(
        'sandbox_failed',
        `${what === 'read' ? 'reading' : 'writing'} ${input} in the sandbox failed (exit ${code ?? 'none'}): ${Buffer.from(stderr).toString('utf8').trim().slice(0, 500)}`,
      );
  }
}

async function readFile({ run, workdir }: FilesTarget, input: string): Promise<string> {
  const out = await run(['sh', '-c', readScript(workdir), 'sh', absolute(input, workdir)], {
    maxOutputBytes: MAX_READ_BYTES + 1,
  });
  if (out.exitCode !== 0) refused(input, out.exitCode, out.stderr, 'read');
  return Buffer.from(out.stdout).toString('utf8');
}

async function writeFile({ run, workdir }: FilesTarget, input: string, content: string): Promise<void> {
  const target = absolute(input, workdir);
  if (target === workdir) throw new PatchbayError('invalid_input', `${input}: is the workspace directory, not a file`);
  const out = await run(['sh', '-c', writeScript(workdir), 'sh', target], {
    stdin: Buffer.from(content, 'utf8'),
    maxOutputBytes: 64 * 1024,
  });
  if (out.exitCode !== 0) refused(input, out.exitCode, out.stderr, 'written');
}

async function listFiles(
  { run, workdir }: FilesTarget,
  input: string,
  options: { recursive?: boolean; limit?: number } = {},
): Promise<FileEntry[]> {
  const limit = Math.max(0, Math.min(options.limit ?? DEFAULT_LIST_LIMIT, DEFAULT_LIST_LIMIT * 100));
  // find's order is the directory's; ask for more than the limit so the sorted head is stable.
  const fetch = options.recursive ? limit * 20 + 1000 : 1_000_000;
  const out = await run(
    ['sh', '-c', listScript(workdir), 'sh', absolute(input, workdir), options.recursive ? '1' : '0', String(fetch)],
    { maxOutputBytes: 64 * 1024 ** 2 },
  );
  if (out.exitCode !== 0) refused(input, out.exitCode, out.stderr, 'listed');
  const entries: FileEntry[] = [];
  for (const record of Buffer.from(out.stdout).toString('utf8').split('\0')) {
    if (!record) continue;
    const [kind, size, path] = record.split('\t') as [string, string, string];
    const rel = path === workdir ? '.' : path.startsWith(`${workdir}/`) ? path.slice(workdir.length + 1) : undefined;
    if (rel === undefined) continue;
    entries.push({ path: rel, type: kind === 'l' ? 'symlink' : kind === 'd' ? 'dir' : 'file', size: Number(size) });
  }
  return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)).slice(0, limit);
}

async function resolveDir({ run, workdir }: FilesTarget, input: string): Promise<string> {
  const out = await run(
    [
      'sh',
      '-c',
      `r=$(realpath -e -- "$1" 2>/dev/null) || exit ${NOT_FOUND}\n${inside(workdir)}\n[ -d "$r" ] || exit ${NOT_DIR}\nprintf %s "$r"`,
      'sh',
      absolute(input, workdir),
    ],
    { maxOutputBytes: 64 * 1024 },
  );
  if (out.exitCode === NOT_DIR) throw new PatchbayError('invalid_input', `${input}: is not a directory`);
  if (out.exitCode !== 0) refused(input, out.exitCode, out.stderr, 'used');
  return Buffer.from(out.stdout).toString('utf8');
}

/**
 * Writes bytes to an absolute path inside the sandbox (the harness's git bundles), and checks
 * what landed there by its size and SHA-256: a bundle that arrived short must not be used.
 */
async function putBytes(run: RunInSandbox, path: string, data: Uint8Array): Promise<void> {
  const out = await run(['sh', '-c', `mkdir -p -- "$(dirname -- "$1")" && cat > "$1" && ${digestLine}`, 'sh', path], {
    stdin: data,
    maxOutputBytes: 64 * 1024,
    timeoutMs: 30 * 60_000,
  });
  if (out.exitCode !== 0)
    throw new PatchbayError(
      'sandbox_failed',
      `writing ${path} into the sandbox failed: ${Buffer.from(out.stderr).toString('utf8').trim().slice(0, 500)}`,
    );
  const landed = parseDigest(out.stdout);
  if (landed?.size !== data.length || landed.sha256 !== sha256(data)) {
    throw new PatchbayError(
      'sandbox_failed',
      `writing ${path} into the sandbox arrived incomplete: ${landed?.size ?? 'an unknown number of'} of ${data.length} bytes landed${landed?.size === data.length ? ', with other content' : ''}`,
    );
  }
}

/**
 * Reads a regular file (not a symlink) at an absolute path inside the sandbox, refusing one over
 * `maxBytes`. The sandbox states the file's size and SHA-256 first, and the bytes must match them.
 */
async function getBytes(run: RunInSandbox, path: string, maxBytes: number): Promise<Uint8Array> {
  const script = `[ -f "$1" ] && [ ! -L "$1" ] || exit ${NOT_REGULAR}
[ "$(stat -c %s -- "$1")" -le "$2" ] || exit ${TOO_BIG}
${digestLine} >&2
exec cat -- "$1"`;
  const out = await run(['sh', '-c', script, 'sh', path, String(maxBytes)], {
    maxOutputBytes: maxBytes + 1,
    timeoutMs: 30 * 60_000,
  });
  if (out.exitCode === NOT_REGULAR)
    throw new PatchbayError('git_failed', `${path} in the sandbox is missing or not a regular file`);
  if (out.exitCode === TOO_BIG || out.stdout.length > maxBytes || out.truncatedBytes.stdout > 0)
    throw new PatchbayError('git_failed', `${path} in the sandbox is larger than ${maxBytes} bytes`);
  if (out.exitCode !== 0)
    throw new PatchbayError(
      'sandbox_failed',
      `reading ${path} from the sandbox failed: ${Buffer.from(out.stderr).toString('utf8').trim().slice(0, 500)}`,
    );
  const stated = parseDigest(out.stderr);
  if (stated?.size !== out.stdout.length || stated.sha256 !== sha256(out.stdout)) {
    throw new PatchbayError(
      'sandbox_failed',
      `reading ${path} from the sandbox arrived incomplete: ${out.stdout.length} bytes of the ${stated?.size ?? 'unknown number'} it holds${stated?.size === out.stdout.length ? ', with other content' : ''}; it was not used`,
    );
  }
  return out.stdout;
}
