import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { counter, createCommandCgroup, probeCgroups } from '../../sandbox/cgroup-limits.ts';
import { DEFAULT_SANDBOX_LIMITS } from '../../sandbox/sandbox-limits.ts';
import { makeTempDir } from './sandbox-test-helpers.ts';

/**
 * The probe's decisions on cgroup trees laid out as the kernel lays them out (plain files in a
 * temp directory: the kernel's own refusals cannot be shown this way, only the choices).
 */
describe('choosing how sandbox limits are enforced', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });
  const tree = async (files: Record<string, string>): Promise<string> => {
    const root = await makeTempDir('cgroupfs');
    dirs.push(root);
    for (const [file, content] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(root, file)), { recursive: true });
      await writeFile(path.join(root, file), content);
    }
    return root;
  };

  it('uses a delegated cgroup v2 subtree: moves its own processes to a leaf and enables memory and pids', async () => {
    const root = await tree({
      'cgroup.controllers': 'cpu memory pids',
      'svc/cgroup.controllers': 'memory pids',
      'svc/cgroup.procs': '4242\n',
      'svc/cgroup.subtree_control': '',
    });
    // A real kernel empties svc/cgroup.procs when the pid moves; a plain file does not, so the
    // probe sees 4242 still there: that is the "cannot move this process" refusal.
    const stuck = await probeCgroups({ cgroupRoot: root, selfCgroup: '0::/svc\n', pid: 4242 });
    expect(stuck).toEqual({ layout: undefined, reason: expect.stringContaining('cannot move this process') });
    await writeFile(path.join(root, 'svc/cgroup.procs'), '');
    const probe = await probeCgroups({ cgroupRoot: root, selfCgroup: '0::/svc\n', pid: 4242 });
    expect(probe).toEqual({ layout: { version: 2, base: path.join(root, 'svc/patchbay-sandboxes-4242') } });
    expect(await readFile(path.join(root, 'svc/cgroup.subtree_control'), 'utf8')).toBe('+memory +pids');
  });

  it('falls back to rlimits when the v2 subtree lacks the controllers, and says why', async () => {
    const root = await tree({ 'cgroup.controllers': 'cpu', 'svc/cgroup.controllers': 'cpu', 'svc/cgroup.procs': '' });
    const probe = await probeCgroups({ cgroupRoot: root, selfCgroup: '0::/svc\n', pid: 4242 });
    expect(probe).toEqual({ layout: undefined, reason: expect.stringMatching(/memory, pids are not delegated/) });
  });

  it('uses writable v1 pids and memory hierarchies of a hybrid host', async () => {
    const root = await tree({ 'unified/cgroup.controllers': '', 'pids/tasks': '', 'memory/job/tasks': '' });
    // The v1 files appear in each new cgroup directory: a plain tree needs them made up front.
    await mkdir(path.join(root, 'pids/patchbay-sandboxes-77'), { recursive: true });
    await writeFile(path.join(root, 'pids/patchbay-sandboxes-77/pids.max'), 'max');
    await mkdir(path.join(root, 'memory/job/patchbay-sandboxes-77'), { recursive: true });
    await writeFile(path.join(root, 'memory/job/patchbay-sandboxes-77/memory.limit_in_bytes'), '9223372036854771712');
    const probe = await probeCgroups({ cgroupRoot: root, selfCgroup: '8:pids:/\n4:memory:/job\n0::/\n', pid: 77 });
    expect(probe.layout).toEqual({
      version: 1,
      pids: path.join(root, 'pids/patchbay-sandboxes-77'),
      memory: path.join(root, 'memory/job/patchbay-sandboxes-77'),
    });
  });

  it('writes the caps of a command cgroup and reads fork refusals and OOM kills back', async () => {
    const root = await tree({ 'base/.keep': '' });
    const cgroup = await createCommandCgroup(
      { version: 2, base: path.join(root, 'base') },
      { ...DEFAULT_SANDBOX_LIMITS, maxProcs: 99, memoryMb: 256 },
    );
    const dir = path.dirname(cgroup.procsFiles[0]!);
    expect(await readFile(path.join(dir, 'pids.max'), 'utf8')).toBe('99');
    expect(await readFile(path.join(dir, 'memory.max'), 'utf8')).toBe(String(256 * 1024 * 1024));
    await writeFile(path.join(dir, 'pids.events'), 'max 3\n');
    await writeFile(path.join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n');
    expect(await cgroup.read()).toEqual({ forkRefusals: 3, oomKills: 1 });
    expect(counter('oom_kill_disable 0\nunder_oom 0\noom_kill 2\n', 'oom_kill')).toBe(2);
  });
});
