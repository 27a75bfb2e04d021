import type { Item } from '../session-model.ts';

/** What process_start answers when it started one: "Started p1 running: npm run dev". */
const STARTED = /^Started (p\d+) running: (.*)$/m;

/**
 * The background processes running now, from the timeline: those process_start started in the
 * current run that process_stop did not stop. A run that ends (any status other than running)
 * stops them all, so none is listed after it.
 */
export function runningProcesses(items: readonly Item[], running: boolean): { id: string; command: string }[] {
  const now = new Map<string, string>();
  for (const item of items) {
    if (item.kind === 'status' && item.to !== 'running') now.clear();
    if (item.kind !== 'tool' || !item.end || item.end.isError) continue;
    const started = item.name === 'process_start' ? STARTED.exec(item.end.output) : null;
    if (started) now.set(started[1]!, started[2]!);
    const stopped = item.name === 'process_stop' && (item.input as { id?: unknown } | undefined)?.id;
    if (typeof stopped === 'string') now.delete(stopped);
  }
  return running ? [...now].map(([id, command]) => ({ id, command })) : [];
}

/** The side panel's list of the background processes (dev servers, watchers) running in the sandbox. */
export function ProcessesView({ items, running }: { items: readonly Item[]; running: boolean }) {
  const processes = runningProcesses(items, running);
  if (processes.length === 0) return <span class="muted">none running</span>;
  return (
    <ul class="plain" id="processes">
      {processes.map((p) => (
        <li key={p.id}>
          <code>{p.id}</code> <code class="gist">{p.command}</code>
        </li>
      ))}
    </ul>
  );
}
