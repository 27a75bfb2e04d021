import { describe, expect, it } from 'vitest';
import { coalesce, coalesceOne } from '../../src/core/coalesce.ts';

/** A run that waits until the test lets it end. */
function gated() {
  const calls: string[] = [];
  const gates: (() => void)[] = [];
  const work = (key: string) =>
    new Promise<void>((resolve) => {
      calls.push(key);
      gates.push(resolve);
    });
  const release = async () => {
    gates.shift()?.();
    await new Promise((r) => setTimeout(r, 0));
  };
  return { calls, work, release };
}

describe('coalesce', () => {
  it('runs once more after the current run however many times it was asked meanwhile', async () => {
    const g = gated();
    const c = coalesce(g.work);
    const first = c.run('a');
    await new Promise((r) => setTimeout(r, 0));
    void c.run('a');
    void c.run('a');
    expect(c.run('a')).toBe(first);
    expect(g.calls).toEqual(['a']);
    await g.release();
    expect(g.calls).toEqual(['a', 'a']);
    expect(c.running('a')).toBe(true);
    await g.release();
    expect(g.calls).toEqual(['a', 'a']);
    expect(c.running('a')).toBe(false);
  });

  it('keeps keys apart', async () => {
    const g = gated();
    const c = coalesce(g.work);
    void c.run('a');
    void c.run('b');
    await new Promise((r) => setTimeout(r, 0));
    expect(g.calls).toEqual(['a', 'b']);
    await g.release();
    await g.release();
    expect(c.running('a') || c.running('b')).toBe(false);
    expect(g.calls).toEqual(['a', 'b']);
  });

  it('does not run again when rerunIf says no (a closed stream, a stopped notifier)', async () => {
    const g = gated();
    let open = true;
    const c = coalesce(g.work, { rerunIf: () => open });
    void c.run('a');
    await new Promise((r) => setTimeout(r, 0));
    void c.run('a');
    open = false;
    await g.release();
    expect(g.calls).toEqual(['a']);
  });

  it('a run that throws still gives way to the run asked for meanwhile', async () => {
    let n = 0;
    const c = coalesceOne(async () => {
      n += 1;
      await new Promise((r) => setTimeout(r, 5));
      if (n === 1) throw new Error('first run failed');
    });
    const first = c.run();
    void c.run();
    await expect(first).rejects.toThrow('first run failed');
    await new Promise((r) => setTimeout(r, 20));
    await c.settled();
    expect(n).toBe(2);
  });
});
