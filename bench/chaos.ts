/**
 * Sessions under chaos: N sessions end to end from all three surfaces in turn (a Slack mention, a
 * mention on a GitHub issue, a Linear issue delegated to the app), each ending in a pull request
 * of its own repository on the loopback GitHub, the model behind the loopback Anthropic API;
 * environment-only configuration (test/helpers/chaos-sessions.ts). First with the fakes answering
 * normally (the baseline), then with chaos (test/fakes/chaos.ts) injecting the services' transient
 * faults at a rate, in the same run. Prints the sessions completed correctly (one PR, its link
 * posted once where it was asked, no duplicate post, comment, activity or commit), each failed one
 * with its problems and the service and fault that ended it, duplicate thread posts and duplicate
 * pushes, the faults injected per service and kind, and both wall times and their ratio.
 *
 * Attribution (test/helpers/chaos-attribution.ts): every fake records what a faulted request
 * concerned (the repository, the Slack channel, the Linear agent session or issue, the task a model
 * request carries), each session has its own of each, and chaos decides faults per subject, so a
 * session's faults are the same for a seed however the sessions interleave. A failed session is
 * ended by its own last fault on a service its error names (else its own last fault; else the last
 * subject-less fault, such as a token request, on a named service); with none, the failure is no
 * transient fault's and is printed as a product bug or a refusal.
 *
 * Run: npm exec -- node bench/chaos.ts [sessions] [--rate=0.05] [--seed=1]
 * The database server is BENCH_DATABASE_URL (an admin connection; default the local postgres).
 */
import pg from 'pg';
import { countFaults } from '../test/fakes/chaos.ts';
import { describeAttribution } from '../test/helpers/chaos-attribution.ts';
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
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const good = run.outcomes.filter((o) => o.problems.length === 0);
  const bySurface = ['slack', 'github', 'linear'].map((surface) => {
    const all = run.outcomes.filter((o) => o.surface === surface);
    return `${surface} ${all.filter((o) => o.problems.length === 0).length}/${all.length}`;
  });
  out(`${label}: ${(run.wallMs / 1000).toFixed(1)} s`);
  out(`  sessions completed: ${good.length}/${run.outcomes.length} (${bySurface.join(', ')})`);
  const failed = run.outcomes.filter((o) => o.problems.length > 0);
  out(`  sessions failed: ${failed.length}`);
  for (const o of failed) {
    out(`    ${o.surface} ${o.task} (session ${o.sessionId}): ${o.problems.join('; ')}`);
    if (o.endedBy !== undefined || run.injected.length > 0) out(`      ended by: ${describeAttribution(o.endedBy)}`);
  }
  const sum = (pick: (o: ChaosRun['outcomes'][number]) => number) => run.outcomes.reduce((n, o) => n + pick(o), 0);
  out(`  duplicate thread posts: ${sum((o) => o.duplicatePosts)}`);
  out(`  duplicate pushes: ${sum((o) => o.duplicatePushes)}`);
  const faults = Object.entries(countFaults(run.injected));
  out(`  faults injected: ${run.injected.length}${faults.length ? '' : ' (none)'}`);
  for (const [kind, count] of faults.sort()) {
    const on = new Set(run.injected.filter((f) => `${f.service} ${f.kind}` === kind).map((f) => f.operation));
    out(`    ${kind}: ${count} (${[...on].sort().join(', ')})`);
  }
  if (run.refused.length)
    out(
      `  refused by the fakes (malformed, or refused as the service would, e.g. a create retried after its answer was lost): ${run.refused.join(' | ')}`,
    );
}

process.stdout.write(`${sessions} sessions (slack, github, linear in turn), chaos rate ${rate}, seed ${seed}\n`);
const calm = await runChaosSessions({ sessions, database });
report('without chaos (baseline)', calm);
const chaotic = await runChaosSessions({ sessions, database, chaos: { rate, seed } });
report(`with chaos at ${rate}`, chaotic);
process.stdout.write(
  `wall time: calm ${(calm.wallMs / 1000).toFixed(1)} s, chaos ${(chaotic.wallMs / 1000).toFixed(1)} s, ratio (chaos / calm) ${(chaotic.wallMs / calm.wallMs).toFixed(2)}\n`,
);
