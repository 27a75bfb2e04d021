import { useState } from 'preact/hooks';
import type { RepoKnowledge } from '../api.ts';
import { api, savedAuthor } from '../api.ts';
import { dateTimeOf } from '../format.ts';

type Entry = NonNullable<RepoKnowledge['document']['egressAllow']>[number];

/**
 * The Repo tab's list of hosts people allowed for every session on the repository, each
 * with who allowed it, where and when, and a Revoke button: new connections are refused again.
 */
export function EgressAllowList({
  repo,
  entries,
  onChanged,
}: {
  repo: string;
  entries: Entry[];
  onChanged: () => void;
}) {
  const [error, setError] = useState('');
  const revoke = async (entry: Entry) => {
    setError('');
    try {
      const author = savedAuthor();
      await api.revokeEgress(repo, {
        host: entry.host,
        ...(entry.port && { port: entry.port }),
        ...(author && { author }),
      });
      onChanged();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <section class="card" id="egress-allow">
      <h3>Allowed network hosts</h3>
      <p class="muted">
        Hosts people allowed from a session's thread for every session on this repository, besides SANDBOX_EGRESS_ALLOW.
        Their addresses are still checked: a private, loopback or link-local one is never reached.
      </p>
      {entries.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <ul>
          {entries.map((entry) => {
            const target = entry.port ? `${entry.host}:${entry.port}` : entry.host;
            return (
              <li key={target} class="egress-allow" data-host={entry.host}>
                <code>{target}</code>{' '}
                <small class="muted">
                  allowed by {entry.by} from {entry.surface} on {dateTimeOf(entry.at)}
                </small>{' '}
                <button type="button" class="link" aria-label={`Revoke ${target}`} onClick={() => revoke(entry)}>
                  Revoke
                </button>
              </li>
            );
          })}
        </ul>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}

/**
 * A host the allowlist refused, on the session's timeline: "Allow for this session" and "Allow for
 * this repository". An address, or a name that resolved to one, is never offered.
 */
export function EgressAllowButtons({ sessionId, host, port }: { sessionId: string; host: string; port: number }) {
  const [state, setState] = useState<'idle' | 'sending' | 'done'>('idle');
  const [said, setSaid] = useState('');
  const allow = async (scope: 'session' | 'repository') => {
    setState('sending');
    try {
      const author = savedAuthor();
      await api.allowEgress(sessionId, { host, port, scope, ...(author && { author }) });
      setState('done');
      setSaid(`Allowed for this ${scope}.`);
    } catch (err) {
      setState('idle');
      setSaid((err as Error).message);
    }
  };
  return (
    <span class="egress-actions">
      {state !== 'done' && (
        <>
          <button type="button" class="link" disabled={state === 'sending'} onClick={() => allow('session')}>
            Allow for this session
          </button>{' '}
          <button type="button" class="link" disabled={state === 'sending'} onClick={() => allow('repository')}>
            Allow for this repository
          </button>
        </>
      )}
      {said && <span role="status"> {said}</span>}
    </span>
  );
}
