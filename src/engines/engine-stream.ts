import type { NewEvent } from '../core/run-log.ts';

/**
 * What one line of an engine's event stream means for the session: the engine's own session id
 * (to resume it), session events to write (with the text among them, for live streaming), the
 * run's end, or nothing Patchbay reads.
 */
export type EngineStreamStep =
  | { kind: 'session'; engineSessionId: string }
  | { kind: 'events'; events: NewEvent[]; texts: string[] }
  | { kind: 'result'; ok: boolean; text: string }
  | { kind: 'ignored' };

/** Tool output kept in a tool-end event: the head, and a note of how much was cut. */
export function clipOutput(output: string, max = 4000): string {
  return output.length > max ? `${output.slice(0, max)}\n[... ${output.length - max} more characters]` : output;
}

/** A path as the page shows it: relative to the workspace when it is inside it. Pure. */
export function workspacePath(path: string, workdir: string): string {
  const root = workdir.endsWith('/') ? workdir : `${workdir}/`;
  return path.startsWith(root) ? path.slice(root.length) : path;
}

/** Parses a line of JSON; undefined when it is not JSON (an engine's stray output). */
export function parseJsonLine(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
