/**
 * Sessions under chaos: N sessions end to end (a Slack mention in, a GitHub pull request out, the
 * model behind the loopback Anthropic API; environment-only configuration), first with the fakes
 * answering normally, then with chaos (test/fakes/chaos.ts) injecting the services' transient
 * faults at a rate, in the same run. Prints the sessions that ended correctly (completed, one PR,
 * its link posted once, no duplicate post, comment or commit), each other one with what went
 * wrong, the faults injected per service and kind, and the wall time of each run and their ratio.
 * Run: npm exec -- node bench/chaos.ts [sessions] [--rate=0.05] [--seed=1]
 * The database server is BENCH_DATABASE_URL (an admin connection; default the local postgres).
 */
import pg from 'pg';
import { countFaults } from '../test/fakes/chaos.ts';
import { type ChaosRun, runChaosSessions } from '../test/helpers/chaos-sessions.ts';

const sessions = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 4);
const option = (name: string, fallback: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const rate = option('rate', 0.05);
const seed = option('seed', 1);

const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
let databases = 0;

/** A fresh database on the bench's server (Patchbay migrates it at start), dropped again by `close`. */
async function database(): Promise<{ url: string; close(): Promise<void> }> {
  const name = `patchbay_bench_chaos_${process.pid}_${++databases}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(sql).finally(() => client.end());
  };
  await admin(`drop database if exists ${name} with (force)`);
  await admin(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), close: () => admin(`drop database if exists ${name} with (force)`) };
}

function report(label: string, run: ChaosRun): void {
  const good = run.outcomes.filter((o) => o.problems.length === 0).length;
  process.stdout.write(
    `${label}: ${good}/${run.outcomes.length} sessions ended correctly, ${(run.wallMs / 1000).toFixed(1)} s\n`,
  );
  for (const o of run.outcomes.filter((x) => x.problems.length > 0))
    process.stdout.write(`  session ${o.sessionId}: ${o.problems.join('; ')}\n`);
  const faults = Object.entries(countFaults(run.injected));
  process.stdout.write(`  faults injected: ${run.injected.length}${faults.length ? '' : ' (none)'}\n`);
  for (const [kind, count] of faults.sort()) {
    const on = new Set(run.injected.filter((f) => `${f.service} ${f.kind}` === kind).map((f) => f.operation));
    process.stdout.write(`    ${kind}: ${count} (${[...on].sort().join(', ')})\n`);
  }
  if (run.refused.length) process.stdout.write(`  refused as malformed: ${run.refused.join(' | ')}\n`);
}

process.stdout.write(`${sessions} sessions, chaos rate ${rate}, seed ${seed}\n`);
const calm = await runChaosSessions({ sessions, database });
report('without chaos', calm);
const chaotic = await runChaosSessions({ sessions, database, chaos: { rate, seed } });
report(`with chaos at ${rate}`, chaotic);
process.stdout.write(`wall time ratio (chaos / calm): ${(chaotic.wallMs / calm.wallMs).toFixed(2)}\n`);
