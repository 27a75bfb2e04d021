import type { CheckRun, SessionModel, Verdict } from '../session-model.ts';
import { dateTimeOf, safeHref } from '../format.ts';

type Group = { commit: string | undefined; checks: CheckRun[]; verdicts: Verdict[] };

/** Checks and the verifier's verdicts, per commit (newest first), with their logs, and the PR. */
export function ChecksView({ model }: { model: SessionModel; version: number }) {
  const groups = new Map<string, Group>();
  const group = (commit: string | undefined) => {
    const key = commit ?? '';
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { commit, checks: [], verdicts: [] }));
    return g;
  };
  for (const check of model.checks) group(check.commit).checks.push(check);
  for (const verdict of model.verdicts) group(verdict.commit).verdicts.push(verdict);
  const ordered = [...groups.values()].reverse();
  const prHref = safeHref(model.pr?.url);
  return (
    <div class="checks-view" id="checks">
      <div class="card">
        <b>Pull request:</b>{' '}
        {model.pr && prHref ? (
          <a href={prHref} rel="noreferrer" target="_blank">
            #{model.pr.number}
          </a>
        ) : (
          <span class="muted">not opened</span>
        )}
      </div>
      {ordered.length === 0 && <p class="muted card">No checks have run yet.</p>}
      {ordered.map((g) => (
        <section class="card check-group" data-commit={g.commit ?? ''}>
          <h3>{g.commit ? <>Commit <code>{g.commit.slice(0, 10)}</code></> : 'Checks'}</h3>
          <ul class="plain">
            {g.checks.map((c) => (
              <li>
                <details class={`check ${c.passed ? 'passed' : 'failed'}`} data-check={c.name}>
                  <summary>
                    <span class={`badge ${c.passed ? 's-completed' : 's-failed'}`}>{c.passed ? 'passed' : 'failed'}</span> {c.name}{' '}
                    <time class="muted" dateTime={c.at}>
                      {dateTimeOf(c.at)}
                    </time>
                  </summary>
                  <pre class="output">{c.output || '(no output)'}</pre>
                </details>
              </li>
            ))}
            {g.verdicts.map((v) => (
              <li class={`verdict ${v.passed ? 'passed' : 'failed'}`}>
                <span class={`badge ${v.passed ? 's-completed' : 's-failed'}`}>verdict {v.passed ? 'passed' : 'failed'}</span> {v.summary}
              </li>
            ))}
          </ul>
        </section>
      ))}
    </div>
  );
}
