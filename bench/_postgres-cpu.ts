/**
 * CPU time spent by one PostgreSQL server, for bench/webhook-ack.ts: its postmaster, its live
 * backends and the backends that have exited (reaped by the postmaster, so counted in its
 * children's time). Read from /proc, so Linux only; elsewhere `postgresCpu` is undefined.
 * Beside latency, which a machine shared with other work makes noisy, CPU per request shows what
 * a handler costs.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** The fields of /proc/<pid>/stat after the command name (field 3 onwards). */
function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

// Field numbers of proc(5), less the three before the fields above.
const PPID = 1;
const UTIME = 11;
const CUTIME = 13;
const ticksToMs = 10;

/**
 * A clock of the CPU milliseconds of the server one of whose backends is `backendPid`; undefined
 * without /proc.
 */
export function postgresCpu(backendPid: number): (() => number) | undefined {
  const postmaster = statFields(backendPid)?.[PPID];
  if (!postmaster) return undefined;
  return () => {
    const own = statFields(postmaster);
    if (!own) return Number.NaN;
    // utime + stime of the postmaster, then cutime + cstime (its exited backends).
    let ticks = Number(own[UTIME]) + Number(own[UTIME + 1]) + Number(own[CUTIME]) + Number(own[CUTIME + 1]);
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const fields = statFields(entry);
      if (fields?.[PPID] === postmaster) ticks += Number(fields[UTIME]) + Number(fields[UTIME + 1]);
    }
    return ticks * ticksToMs;
  };
}
