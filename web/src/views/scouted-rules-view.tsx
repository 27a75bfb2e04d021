import type { KnowledgeDocument } from '../api.ts';
import { dateTimeOf } from '../format.ts';

type Scouted = NonNullable<KnowledgeDocument['scouted']>;
export type ScoutedRuleRow = Scouted['rules'][number];

/**
 * What the scout learned from the repository's recent pull requests: each rule's
 * sentence, editable, with its evidence (the pull requests, links, a quoted comment) and the date
 * it was seen. Removing one stops the harness obeying it; a save keeps it removed until the next edit.
 */
export function ScoutedRules(props: {
  scouted: Scouted | undefined;
  rules: ScoutedRuleRow[];
  onChange: (rules: ScoutedRuleRow[]) => void;
}) {
  const { scouted, rules, onChange } = props;
  if (!scouted) return null;
  return (
    <section class="card" id="scouted-rules">
      <h3>Learned from recent pull requests</h3>
      <p class="muted">
        Read from the last {scouted.pullsRead} closed pull requests on {dateTimeOf(scouted.at)} ({scouted.calls} GitHub
        calls). The harness follows the branch, title, sign-off and open-PR rules; quotes are what people wrote, shown
        as data.
      </p>
      {rules.length === 0 && <p class="muted">None.</p>}
      {rules.map((r, i) => (
        <div class="command-row scouted-rule" key={`${r.rule.kind}-${i}`} data-kind={r.rule.kind}>
          <input
            aria-label={`Learned rule ${i + 1}`}
            class="command-text"
            value={r.text}
            onInput={(e) => onChange(rules.map((x, j) => (j === i ? { ...x, text: e.currentTarget.value } : x)))}
          />
          <button
            type="button"
            class="link"
            aria-label={`Remove learned rule ${i + 1}`}
            onClick={() => onChange(rules.filter((_, j) => j !== i))}
          >
            Remove
          </button>
          <small class="muted source">
            evidence:{' '}
            {r.evidence.pulls.length === 0
              ? "the default branch's rules"
              : r.evidence.pulls.map((n, k) => (
                  <span key={n}>
                    {k > 0 && ', '}
                    {r.evidence.links[k] ? <a href={r.evidence.links[k]}>#{n}</a> : `#${n}`}
                  </span>
                ))}{' '}
            · seen {dateTimeOf(r.seen)}
          </small>
          {r.evidence.quote && <blockquote class="muted">{r.evidence.quote}</blockquote>}
        </div>
      ))}
    </section>
  );
}
