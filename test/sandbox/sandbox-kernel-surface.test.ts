import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxProvider, Sandbox } from '../../sandbox/index.ts';
import { makeProvider } from './sandbox-test-helpers.ts';

/** Each denied call, made from Python with ctypes; prints "name errno" (0 when it succeeded). */
const PROBE = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
N = {'x86_64': dict(init_module=175, keyctl=250, add_key=248, mount=165, fsopen=430, ptrace=101, process_vm_readv=310, bpf=321, userfaultfd=323, perf_event_open=298),
     'aarch64': dict(init_module=105, keyctl=219, add_key=217, mount=40, fsopen=430, ptrace=117, process_vm_readv=270, bpf=280, userfaultfd=282, perf_event_open=241)}[os.uname().machine]
def call(name, *args):
    ctypes.set_errno(0)
    r = libc.syscall(N[name], *[ctypes.c_long(a) for a in args])
    print(name, 0 if r >= 0 else ctypes.get_errno())
call('init_module', 0, 0, 0)
call('keyctl', 0, -3, 0)                    # KEYCTL_GET_KEYRING_ID of the session keyring
call('add_key', 0, 0, 0, 0, 0)
call('mount', 0, 0, 0, 0, 0)
call('fsopen', 0, 0)
call('bpf', 0, 0, 0)
call('userfaultfd', 1)                      # UFFD_USER_MODE_ONLY: allowed to anyone without the filter
call('perf_event_open', 0, 0, -1, -1, 0)
child = os.fork()
if child == 0:
    import time; time.sleep(30); os._exit(0)
call('ptrace', 16, child, 0, 0)             # PTRACE_ATTACH to a sibling
call('process_vm_readv', child, 0, 0, 0, 0, 0)
os.kill(child, 9)
`;

describe('the sandbox kernel surface', () => {
  let provider: LocalSandboxProvider;
  let cleanup: () => Promise<void>;
  let sandbox: Sandbox;

  beforeAll(async () => {
    ({ provider, cleanup } = await makeProvider());
    sandbox = await provider.acquire('kernel-surface', { network: 'none' });
  });
  afterAll(async () => {
    await sandbox.destroy();
    await cleanup();
  });

  it('runs every command under a seccomp filter', async () => {
    const result = await sandbox.exec('grep -E "^(Seccomp|NoNewPrivs):" /proc/self/status');
    expect(result.stdout).toMatch(/Seccomp:\s+2/);
  });

  it('refuses kernel modules, keyrings, mounts, ptrace of others, bpf, userfaultfd and perf with EPERM', async () => {
    const result = await sandbox.exec('python3 - ', { stdin: PROBE });
    expect(result.stderr).toBe('');
    const errnos = Object.fromEntries(
      result.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(' '))
        .map(([name, errno]) => [name, Number(errno)]),
    );
    const EPERM = 1;
    expect(errnos).toEqual({
      init_module: EPERM,
      keyctl: EPERM,
      add_key: EPERM,
      mount: EPERM,
      fsopen: EPERM,
      bpf: EPERM,
      userfaultfd: EPERM,
      perf_event_open: EPERM,
      ptrace: EPERM,
      process_vm_readv: EPERM,
    });
  });

  it('refuses nested user namespaces, so no mount or network setup can be reached through one', async () => {
    const shell = await sandbox.exec('unshare --user sh -c "echo inside a nested namespace"; echo "exit=$?"');
    expect(shell.stdout).not.toContain('inside a nested namespace');
    expect(shell.stdout).toMatch(/exit=[1-9]/);
    // The call itself, not just the unshare tool: CLONE_NEWUSER is refused (ENOSPC: the namespace limit is zero).
    const call = await sandbox.exec(
      `python3 -c "import ctypes; l = ctypes.CDLL(None, use_errno=True); print(l.unshare(0x10000000), ctypes.get_errno())"`,
    );
    expect(call.stdout.trim()).toMatch(/^-1 [1-9]\d*$/);
  });

  it('still runs the tools a coding agent uses: sh, git, node, python and rg', async () => {
    const script = [
      'set -e',
      'git init -q repo && cd repo',
      'git -c user.name=a -c user.email=a@b commit -q --allow-empty -m first && git log --oneline | wc -l',
      "node -e \"require('node:fs').writeFileSync('n.txt', String(6*7))\" && cat n.txt && echo",
      'python3 -c "import json, subprocess, threading; print(json.dumps({\'ok\': True}))"',
      'rg --version > v.txt && head -1 v.txt | cut -d" " -f1',
      'echo hello > h.txt && rg -c hello h.txt',
    ].join('\n');
    const result = await sandbox.exec(script);
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual(['1', '42', '{"ok": true}', 'ripgrep', '1']);
  });
});
