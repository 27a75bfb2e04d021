import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { SandboxProvider } from '../../../sandbox/sandbox.ts';
import type { EvalTask } from './eval-suite.ts';
import { filesAt } from './eval-repo.ts';

export type HiddenTestResult = {
  outcome: 'passed' | 'failed' | 'not-run';
  exitCode: number | null;
  /** The end of the combined output, or why the tests did not run. */
  detail: string;
};

const hiddenTimeoutMs = 5 * 60_000;

/**
 * The task's hidden tests against the commit the agent pushed: a fresh sandbox of its own (no
 * network), the pushed tree written into it, `hidden/` copied over it, then `hiddenTest`. The agent's
 * workspace is never used, so nothing it left uncommitted counts, and the tests never reach it.
 */
export async function runHiddenTests(options: {
  sandboxes: SandboxProvider;
  sessionId: string;
  remote: string;
  commit: string | undefined;
  task: EvalTask;
  signal?: AbortSignal;
}): Promise<HiddenTestResult> {
  const { task, commit } = options;
  if (!commit) return { outcome: 'not-run', exitCode: null, detail: 'the session pushed no commit' };
  const sandbox = await options.sandboxes.acquire(`${options.sessionId}-hidden`, { network: 'none' });
  try {
    for (const file of await filesAt(options.remote, commit)) await sandbox.writeFile(file.path, file.content);
    for (const file of await hiddenFiles(join(task.dir, 'hidden'))) await sandbox.writeFile(file.path, file.content);
    const result = await sandbox.exec(task.hiddenTest, {
      timeoutMs: hiddenTimeoutMs,
      ...(options.signal && { signal: options.signal }),
    });
    const output = `${result.stdout}${result.stderr}`.trimEnd();
    if (result.timedOut)
      return {
        outcome: 'failed',
        exitCode: null,
        detail: `timed out after ${hiddenTimeoutMs / 1000} s\n${output.slice(-2000)}`,
      };
    return {
      outcome: result.exitCode === 0 ? 'passed' : 'failed',
      exitCode: result.exitCode,
      detail: output.slice(-2000),
    };
  } finally {
    await sandbox.destroy();
  }
}

async function hiddenFiles(root: string): Promise<{ path: string; content: string }[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const files: { path: string; content: string }[] = [];
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const full = join(entry.parentPath, entry.name);
    files.push({ path: relative(root, full), content: await readFile(full, 'utf8') });
  }
  return files.sort((a, b) => a.path.localeCompare(b.path));
}
