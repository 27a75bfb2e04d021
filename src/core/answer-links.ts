/**
 * File references in an answer turned into links at one commit: `src/retry.ts:12`,
 * `src/retry.ts:12-20`, `src/retry.ts#L12` or a bare `src/retry.ts`, with or without backticks.
 * Only paths that exist at that commit are linked (the caller says which); nothing else changes.
 */

/** A path with an extension, optional lines; not inside a URL or a longer path. */
const REFERENCE =
  /(`?)(?<![\w/.:@-])((?:\.\/)?(?:[\w@.+-]+\/)*[\w@+-][\w@.+-]*\.[A-Za-z0-9]+)(?::(\d+)(?:-(\d+))?|#L(\d+)(?:-L?(\d+))?)?\1/g;

/** The paths an answer names, without `./`, at most `max` (the first ones). */
export function referencedPaths(text: string, max = 40): string[] {
  const paths = new Set<string>();
  for (const match of text.matchAll(REFERENCE)) {
    if (paths.size >= max) break;
    paths.add(match[2]!.replace(/^\.\//, ''));
  }
  return [...paths];
}

/** Where a file's lines are shown: `<repo web URL>/blob/<commit>/<path>#L<from>-L<to>`. */
export function blobUrl(repoWeb: string, commit: string, path: string, lines?: { from: number; to?: number }): string {
  const base = `${repoWeb.replace(/\/+$/, '').replace(/\.git$/i, '')}/blob/${commit}/${path.split('/').map(encodeURIComponent).join('/')}`;
  if (!lines) return base;
  return lines.to && lines.to > lines.from ? `${base}#L${lines.from}-L${lines.to}` : `${base}#L${lines.from}`;
}

/** The answer with each reference to an existing path made a Markdown link `[path:lines](url)`. */
export function linkAnswer(
  text: string,
  options: { exists: ReadonlySet<string>; repoWeb: string; commit: string },
): string {
  return text.replace(
    REFERENCE,
    (whole, _tick: string, raw: string, a?: string, b?: string, c?: string, d?: string) => {
      const path = raw.replace(/^\.\//, '');
      if (!options.exists.has(path)) return whole;
      const fromText = a ?? c;
      const toText = b ?? d;
      const lines = fromText ? { from: Number(fromText), ...(toText && { to: Number(toText) }) } : undefined;
      const label = lines ? `${path}:${lines.from}${lines.to && lines.to > lines.from ? `-${lines.to}` : ''}` : path;
      return `[${label}](${blobUrl(options.repoWeb, options.commit, path, lines)})`;
    },
  );
}

/** The repository's web address when it has one (an http(s) URL); undefined for a local path or ssh. */
export function repoWebUrl(repo: string): string | undefined {
  return /^https?:\/\/[^/\s]+\/\S+/i.test(repo.trim())
    ? repo
        .trim()
        .replace(/\/+$/, '')
        .replace(/\.git$/i, '')
    : undefined;
}
