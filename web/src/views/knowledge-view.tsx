import { useEffect, useState } from 'preact/hooks';
import type { KnowledgeDocument, RepoKnowledge } from '../api.ts';
import { api, ApiError, saveAuthorName, savedAuthor } from '../api.ts';
import { dateTimeOf } from '../format.ts';
import { Autonomy, describeAutonomy } from '../../../src/core/autonomy.ts';
import { EgressAllowList } from './egress-allow-view.tsx';
import { ScoutedRules, type ScoutedRuleRow } from './scouted-rules-view.tsx';

type Row = { name: string; command: string; source: string };
type Kind = 'setup' | 'checks';

const kinds: { kind: Kind; title: string; hint: string; placeholder: string }[] = [
  {
    kind: 'setup',
    title: 'Setup',
    hint: 'Run once per workspace before the agent starts (installing dependencies).',
    placeholder: 'npm ci',
  },
  {
    kind: 'checks',
    title: 'Checks',
    hint: 'Run on the exact commit the agent produced; a PR is ready only when they pass.',
    placeholder: 'npm test',
  },
];

/** What a person is editing: the document's editable parts, as the form holds them. */
type Draft = {
  rows: Record<Kind, Row[]>;
  conventions: string;
  autonomy: Autonomy | '';
  scoutedRules: ScoutedRuleRow[];
};

const emptyDraft: Draft = { rows: { setup: [], checks: [] }, conventions: '', autonomy: '', scoutedRules: [] };

function draftOf(doc: KnowledgeDocument): Draft {
  return {
    rows: { setup: doc.setup.map((c) => ({ ...c })), checks: doc.checks.map((c) => ({ ...c })) },
    conventions: doc.conventions.join('\n\n'),
    autonomy: doc.autonomy ?? '',
    scoutedRules: doc.scouted?.rules ?? [],
  };
}

/** What a person typed, as the document the API takes; undefined with the reason when it cannot be. */
function toDocument(base: KnowledgeDocument, draft: Draft, editor: string): KnowledgeDocument | string {
  const setup = commandsOf(base, draft.rows, 'setup', editor);
  if (typeof setup === 'string') return setup;
  const checks = commandsOf(base, draft.rows, 'checks', editor);
  if (typeof checks === 'string') return checks;
  const paragraphs = draft.conventions
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .filter(Boolean);
  const { autonomy: _before, ...rest } = base;
  const scouted = base.scouted && { ...base.scouted, rules: draft.scoutedRules.filter((r) => r.text.trim()) };
  return {
    ...rest,
    setup,
    checks,
    conventions: paragraphs,
    ...(draft.autonomy && { autonomy: draft.autonomy }),
    ...(scouted && { scouted }),
  };
}

/** The setup steps or checks a person kept (blank rows dropped), or why they cannot be saved. */
function commandsOf(base: KnowledgeDocument, rows: Record<Kind, Row[]>, kind: Kind, editor: string): Row[] | string {
  const original = new Map(base[kind].map((c) => [`${c.name}\u0000${c.command}`, c.source]));
  const kept = rows[kind].filter((r) => r.name.trim() || r.command.trim());
  const incomplete = kept.find((r) => !r.name.trim() || !r.command.trim());
  if (incomplete) return `Every ${kind === 'setup' ? 'setup step' : 'check'} needs a name and a command.`;
  return kept.map((r) => {
    const name = r.name.trim();
    const command = r.command.trim();
    // A command read from a repo file keeps its source; one a person wrote or changed says who.
    return { name, command, source: original.get(`${name}\u0000${command}`) ?? `edited by ${editor}` };
  });
}

type SaveState = 'idle' | 'saving' | 'saved';

/**
 * The repository's knowledge document, readable and editable: the setup steps and checks the
 * harness runs, the conventions the agent follows, the instructions read from the repo's files and
 * the lessons of earlier sessions. A saved edit wins over the extraction until the next edit.
 */
export function KnowledgeView({ repo }: { repo: string | undefined }) {
  const [stored, setStored] = useState<RepoKnowledge | undefined>();
  const [missing, setMissing] = useState('');
  const [draft, setDraft] = useState<Draft>(emptyDraft);
  const [name, setName] = useState(savedAuthor()?.name ?? '');
  const [state, setState] = useState<SaveState>('idle');
  const [error, setError] = useState('');

  const show = (k: RepoKnowledge) => {
    setStored(k);
    setDraft(draftOf(k.document));
  };

  useEffect(() => {
    if (!repo) return;
    api.knowledge(repo).then(show, (err: Error) => {
      if (err instanceof ApiError && err.status === 404) setMissing(err.message);
      else setError(err.message);
    });
  }, [repo]);

  if (!repo || missing || !stored)
    return <KnowledgeUnread loading={!repo || (!stored && !missing && !error)} missing={missing} error={error} />;

  // Any change clears the "Saved" mark.
  const edit = (patch: Partial<Draft>) => {
    setState('idle');
    setDraft({ ...draft, ...patch });
  };
  const save = async (event: Event) => {
    event.preventDefault();
    setError('');
    if (!name.trim()) return setError('Give your name: the edit is signed with it.');
    const document = toDocument(stored.document, draft, name.trim());
    if (typeof document === 'string') return setError(document);
    saveAuthorName(name);
    setState('saving');
    try {
      show(await api.saveKnowledge(repo, document, { name: name.trim() }));
      setState('saved');
    } catch (err) {
      setState('idle');
      setError((err as Error).message);
    }
  };

  return (
    <form class="knowledge-view" id="knowledge" onSubmit={save}>
      <KnowledgeHeader stored={stored} />
      <DraftSections draft={draft} scouted={stored.document.scouted} onEdit={edit} />
      <RepoInstructions instructions={stored.document.instructions} />
      <Lessons lessons={stored.lessons} />
      <EgressAllowList
        repo={repo}
        entries={stored.document.egressAllow ?? []}
        onChanged={() => api.knowledge(repo).then(show, (err: Error) => setError(err.message))}
      />
      <SignAndSave name={name} onName={setName} state={state} />
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** The parts of the document a person edits: setup steps, checks, conventions, autonomy, learned rules. */
function DraftSections(props: {
  draft: Draft;
  scouted: KnowledgeDocument['scouted'];
  onEdit: (patch: Partial<Draft>) => void;
}) {
  const { draft, scouted, onEdit } = props;
  return (
    <>
      {kinds.map((k) => (
        <CommandSection
          key={k.kind}
          {...k}
          rows={draft.rows[k.kind]}
          onChange={(next) => onEdit({ rows: { ...draft.rows, [k.kind]: next } })}
        />
      ))}
      <ConventionsSection value={draft.conventions} onChange={(conventions) => onEdit({ conventions })} />
      <AutonomySection value={draft.autonomy} onChange={(autonomy) => onEdit({ autonomy })} />
      <ScoutedRules
        scouted={scouted}
        rules={draft.scoutedRules}
        onChange={(scoutedRules) => onEdit({ scoutedRules })}
      />
    </>
  );
}

/** Before there is a document to show: reading it, none built yet for the repository, or why it could not be read. */
function KnowledgeUnread({ loading, missing, error }: { loading: boolean; missing: string; error: string }) {
  if (loading) return <p class="muted card">Loading…</p>;
  if (missing)
    return (
      <p class="muted card" id="knowledge">
        {missing}
      </p>
    );
  return (
    <p class="error card" role="alert">
      {error}
    </p>
  );
}

function ConventionsSection({ value, onChange }: { value: string; onChange: (next: string) => void }) {
  return (
    <section class="card">
      <h3>Conventions</h3>
      <label for="conventions" class="muted">
        Branch, commit and pull-request conventions; a blank line between entries.
      </label>
      <textarea id="conventions" rows={5} value={value} onInput={(e) => onChange(e.currentTarget.value)} />
    </section>
  );
}

/** The name an edit is signed with, and the button that saves it. */
function SignAndSave(props: { name: string; onName: (name: string) => void; state: SaveState }) {
  const { name, onName, state } = props;
  return (
    <div class="card composer-row">
      <label for="knowledge-name">Name</label>
      <input id="knowledge-name" value={name} placeholder="your name" onInput={(e) => onName(e.currentTarget.value)} />
      <button id="save-knowledge" type="submit" disabled={state === 'saving'}>
        {state === 'saving' ? 'Saving…' : 'Save'}
      </button>
      {state === 'saved' && (
        <span class="saved" role="status">
          Saved
        </span>
      )}
    </div>
  );
}

function KnowledgeHeader({ stored }: { stored: RepoKnowledge }) {
  return (
    <div class="card">
      <h3>Repository knowledge</h3>
      <p class="muted">
        <code>{stored.repo}</code> · built from <code>{stored.builtFrom.slice(0, 10)}</code> on{' '}
        {dateTimeOf(stored.builtAt)} ·{' '}
        <span id="knowledge-source" data-source={stored.source}>
          {stored.edited
            ? `edited by ${stored.edited.by} on ${dateTimeOf(stored.edited.at)}`
            : "extracted from the repository's files"}
        </span>
      </p>
      <p class="muted">
        Every run starts with this document. An edit here wins over what Patchbay reads from the repository until the
        next edit.
      </p>
    </div>
  );
}

/** The setup steps or the checks, each a name and a command a person can change, remove or add. */
function CommandSection(props: (typeof kinds)[number] & { rows: Row[]; onChange: (rows: Row[]) => void }) {
  const { kind, title, hint, placeholder, rows, onChange } = props;
  const edit = (index: number, patch: Partial<Row>) =>
    onChange(rows.map((r, i) => (i === index ? { ...r, ...patch } : r)));
  return (
    <section class="card commands" data-kind={kind}>
      <h3>{title}</h3>
      <p class="muted">{hint}</p>
      {rows.length === 0 && <p class="muted">None.</p>}
      {rows.map((row, i) => (
        <div class="command-row" key={`${kind}-${i}`}>
          <input
            aria-label={`${title} ${i + 1} name`}
            class="command-name"
            value={row.name}
            placeholder="test"
            onInput={(e) => edit(i, { name: e.currentTarget.value })}
          />
          <input
            aria-label={`${title} ${i + 1} command`}
            class="command-text"
            value={row.command}
            placeholder={placeholder}
            onInput={(e) => edit(i, { command: e.currentTarget.value })}
          />
          <button
            type="button"
            class="link"
            aria-label={`Remove ${title.toLowerCase()} ${i + 1}`}
            onClick={() => onChange(rows.filter((_, j) => j !== i))}
          >
            Remove
          </button>
          {row.source && <small class="muted source">from {row.source.replace(/^edited by /, 'an edit by ')}</small>}
        </div>
      ))}
      <button type="button" class="link add" onClick={() => onChange([...rows, { name: '', command: '', source: '' }])}>
        Add {kind === 'setup' ? 'a setup step' : 'a check'}
      </button>
    </section>
  );
}

/** The repository's autonomy: over the installation's AUTONOMY; a requester's "plan first: …" wins over it. */
function AutonomySection({ value, onChange }: { value: Autonomy | ''; onChange: (next: Autonomy | '') => void }) {
  return (
    <section class="card">
      <h3>Autonomy</h3>
      <label for="repo-autonomy" class="muted">
        What waits for a person in this repository's sessions. A requester's first words ("plan first: …") win over it.
      </label>
      <select id="repo-autonomy" value={value} onChange={(e) => onChange(e.currentTarget.value as Autonomy | '')}>
        <option value="">the installation's (AUTONOMY)</option>
        {Autonomy.options.map((level) => (
          <option key={level} value={level}>
            {describeAutonomy(level)}
          </option>
        ))}
      </select>
    </section>
  );
}

function RepoInstructions({ instructions }: { instructions: KnowledgeDocument['instructions'] }) {
  if (instructions.length === 0) return null;
  return (
    <section class="card">
      <h3>Instructions from the repository</h3>
      {instructions.map((i) => (
        <details key={i.source}>
          <summary>{i.source}</summary>
          <pre class="output">{i.text}</pre>
        </details>
      ))}
    </section>
  );
}

function Lessons({ lessons }: { lessons: RepoKnowledge['lessons'] }) {
  return (
    <section class="card" id="lessons">
      <h3>Lessons from earlier sessions</h3>
      {lessons.length === 0 ? (
        <p class="muted">None yet.</p>
      ) : (
        <ul>
          {lessons.map((l) => (
            <li key={l.at + l.text}>
              {l.text} <small class="muted">{dateTimeOf(l.at)}</small>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
