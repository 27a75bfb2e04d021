import { useEffect, useState } from 'preact/hooks';
import type { DiffFile, SessionDiff } from '../../../src/api/api-types.ts';
import { api } from '../api.ts';
import { timeOf } from '../format.ts';
import { highlightLine, languageOf } from '../highlight.ts';

/** Files whose patch is longer than this start folded. */
const FOLD_LINES = 400;

/**
 * The pushed branch against its base, file by file, or one commit of it. Read again whenever the
 * branch moves (a new push).
 */
export function DiffView({ sessionId, pushes }: { sessionId: string; pushes: number }) {
  const [commit, setCommit] = useState<string | undefined>();
  const [diff, setDiff] = useState<SessionDiff | undefined>();
  const [error, setError] = useState('');
  useEffect(() => {
    let current = true;
    api.diff(sessionId, commit).then(
      (next) => {
        if (!current) return;
        setDiff(next);
        setError('');
      },
      (err: Error) => current && setError(err.message),
    );
    return () => {
      current = false;
    };
  }, [sessionId, commit, pushes]);

  if (error) return <p class="error card">{error}</p>;
  if (!diff) return <p class="muted card">Loading the diff…</p>;
  if (diff.state === 'none')
    return (
      <p class="muted card" id="diff-none">
        No diff yet: {diff.reason}.
      </p>
    );
  const additions = diff.files.reduce((n, f) => n + f.additions, 0);
  const deletions = diff.files.reduce((n, f) => n + f.deletions, 0);
  return (
    <div class="diff" id="diff">
      <div class="card diff-head">
        <div>
          <code>{diff.branch}</code> at <code>{diff.head.slice(0, 10)}</code> against{' '}
          <code>{diff.base.slice(0, 10)}</code>: {diff.files.length} file
          {diff.files.length === 1 ? '' : 's'}, <span class="add">+{additions}</span>{' '}
          <span class="del">−{deletions}</span>
        </div>
        <fieldset class="commits" aria-label="Commits">
          <button
            type="button"
            class={commit === undefined ? 'chip active' : 'chip'}
            onClick={() => setCommit(undefined)}
          >
            All changes
          </button>
          {diff.commits.map((c) => (
            <button
              type="button"
              class={commit === c.sha ? 'chip active' : 'chip'}
              title={`${c.author}, ${timeOf(c.at)}`}
              onClick={() => setCommit(c.sha)}
            >
              <code>{c.sha.slice(0, 7)}</code> {c.subject}
            </button>
          ))}
        </fieldset>
        {diff.truncated && (
          <p class="muted">The diff is too large to show whole; the files after these are left out.</p>
        )}
      </div>
      {diff.files.map((file) => (
        <FileDiff key={`${commit ?? 'all'}:${file.path}`} file={file} />
      ))}
    </div>
  );
}

function FileDiff({ file }: { file: DiffFile }) {
  const lines = file.patch ? file.patch.replace(/\n$/, '').split('\n') : [];
  const [open, setOpen] = useState(lines.length <= FOLD_LINES);
  const lang = languageOf(file.path);
  return (
    <section class="file card" data-path={file.path}>
      <button type="button" class="file-head" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span class={`fstatus f-${file.status}`}>{file.status}</span>{' '}
        <code class="path">{file.oldPath ? `${file.oldPath} → ${file.path}` : file.path}</code>{' '}
        <span class="add">+{file.additions}</span> <span class="del">−{file.deletions}</span>
      </button>
      {open &&
        (file.binary ? (
          <p class="muted pad">Binary file</p>
        ) : (
          <pre class="hunks">
            {lines.map((line) => {
              const kind = line.startsWith('@@')
                ? 'hunk'
                : line.startsWith('+')
                  ? 'add'
                  : line.startsWith('-')
                    ? 'del'
                    : line.startsWith('\\')
                      ? 'meta'
                      : 'ctx';
              if (kind === 'hunk' || kind === 'meta') return <div class={`line ${kind}`}>{line}</div>;
              return (
                <div class={`line ${kind}`}>
                  <span class="sign">{line[0] ?? ' '}</span>
                  {highlightLine(line.slice(1), lang).map((t) =>
                    t.kind ? <span class={`tk-${t.kind}`}>{t.text}</span> : t.text,
                  )}
                </div>
              );
            })}
          </pre>
        ))}
    </section>
  );
}
