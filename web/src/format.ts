/** Small formatting helpers shared by the views. */
import { describeToolCall } from '../../src/core/tool-call.ts';

export function timeOf(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime())
    ? ''
    : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function dateTimeOf(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleString();
}

/** "3 min ago", "2 h ago", "4 d ago". */
export function ageOf(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - new Date(iso).getTime()) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86_400)} d ago`;
}

export function tokens(n: number): string {
  return n >= 10_000 ? `${(n / 1000).toFixed(1).replace(/\.0$/, '')}k` : String(n);
}

/** List-price estimate; "cost unknown" when a model's price is not known. */
export function costText(usd: number | null | undefined): string {
  if (usd === null || usd === undefined) return 'cost unknown';
  return `≈ $${usd > 0 && usd < 0.01 ? usd.toFixed(4) : usd.toFixed(2)}`;
}

export function duration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** Time a step has been going, in whole seconds, as a person reads a timer: `45 s`, `2 min 05 s`, `1 h 02 min`. */
export function elapsed(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const pad = (n: number) => String(n).padStart(2, '0');
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${pad(seconds % 60)} s`;
  return `${Math.floor(minutes / 60)} h ${pad(minutes % 60)} min`;
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** Only http(s) links are rendered as links; anything else (javascript:, data:) is not. */
export function safeHref(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value, location.href);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The one-line gist of a tool call: its command, path or pattern; for a browser step, the element
 * it acted on as the page named it (from the snapshot it answered with) and the URL it ended at.
 */
export function toolGist(name: string, input: unknown, output?: string): string {
  const detail = describeToolCall(name, input).detail;
  if (!name.startsWith('browser_') || output === undefined) return detail;
  const url = /^URL: (\S+)/m.exec(output)?.[1];
  const ref = typeof input === 'object' && input !== null ? (input as { ref?: unknown }).ref : undefined;
  const element =
    typeof ref === 'string' && /^e\d+$/.test(ref)
      ? (new RegExp(`^\\s*- (.*?) \\[ref=${ref}\\]`, 'm').exec(output)?.[1] ?? ref)
      : detail;
  return [element, url && `→ ${url}`].filter(Boolean).join(' ');
}
