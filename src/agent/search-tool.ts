import { z } from 'zod';
import { DEFAULT_MAX_OUTPUT_CHARS } from './output-cap.ts';
import type { Tool } from './tool.ts';
import { toolPath } from './tool-path.ts';
import { shellQuote } from './shell-quote.ts';

export type SearchToolOptions = {
  /** Matching lines returned at most. */
  maxResults?: number | undefined;
  /** Characters of matching lines returned at most; whole lines only. */
  maxOutputChars?: number | undefined;
  timeoutMs?: number | undefined;
};

const SearchInput = z.object({
  pattern: z
    .string()
    .min(1)
    .describe('Regular expression (ripgrep/Rust syntax). Escape regex characters for a literal search.'),
  path: z
    .string()
    .optional()
    .describe('File or directory to search, relative to the workspace root. Default: the root.'),
  glob: z
    .string()
    .optional()
    .describe('Only search files matching this glob, for example "*.ts" or "src/**/*.test.ts".'),
  case_insensitive: z.boolean().optional().describe('Ignore case. Default false.'),
});
type SearchInput = z.infer<typeof SearchInput>;

const MAX_LINE_COLUMNS = 300;

/**
 * Content search with ripgrep, run inside the sandbox. Respects .gitignore and skips binary files;
 * hidden files (.github/, .eslintrc) are searched, since they are often what a change is about.
 */
export function createSearchTool(options: SearchToolOptions = {}): Tool<SearchInput> {
  const maxResults = options.maxResults ?? 200;
  const maxOutputChars = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  const timeoutMs = options.timeoutMs ?? 60_000;
  return {
    name: 'search',
    description:
      'Search file contents in the workspace with ripgrep. Returns "path:line:text" for each matching line. ' +
      'Searches hidden files too; skips .git, .gitignored and binary files.',
    inputSchema: SearchInput,
    async execute(input, ctx) {
      const path = toolPath(input.path ?? '.', ctx.sandbox.workdir);
      const args = [
        'rg',
        '--line-number',
        '--with-filename',
        '--no-heading',
        '--color=never',
        `--max-columns=${MAX_LINE_COLUMNS}`,
        '--max-columns-preview',
        '--hidden',
        "--glob '!.git/'",
      ];
      if (input.case_insensitive) args.push('--ignore-case');
      if (input.glob !== undefined) args.push('--glob', shellQuote(input.glob));
      args.push('--regexp', shellQuote(input.pattern));
      // Without a path rg prints "src/a.ts" rather than "./src/a.ts".
      if (path !== '.') args.push('--', shellQuote(path));
      const result = await ctx.sandbox.exec(args.join(' '), { timeoutMs, signal: ctx.signal });
      if (result.aborted) return { content: 'Search aborted.', isError: true };
      if (result.timedOut)
        return { content: `Search timed out after ${timeoutMs / 1000}s; narrow the path or glob.`, isError: true };
      const where = `${path}${input.glob ? ` (glob ${input.glob})` : ''}`;
      if (result.exitCode === 1) return { content: `No matches for /${input.pattern}/ in ${where}.` };
      if (result.exitCode === 2 && result.stderr.includes('No files were searched')) {
        return {
          content: `No files to search in ${where}: nothing there matches, or ripgrep skips it (.gitignored or binary).`,
        };
      }
      const lines = result.stdout.split('\n').filter((line) => line !== '');
      // rg exits 2 on a bad pattern or path, and also when some files were unreadable but others matched.
      if (result.exitCode !== 0 && lines.length === 0) {
        return {
          content: `Search failed (rg exit ${result.exitCode}): ${result.stderr.trim() || 'no output'}`,
          isError: true,
        };
      }
      // Whole lines only, within the run's limit less room for the notes, so nothing cuts it again.
      const budget =
        ctx.maxOutputChars === undefined ? maxOutputChars : Math.min(maxOutputChars, ctx.maxOutputChars - 400);
      const shown: string[] = [];
      let size = 0;
      for (const line of lines.slice(0, maxResults)) {
        if (size + line.length + 1 > budget) break;
        shown.push(line);
        size += line.length + 1;
      }
      const partial = result.truncatedBytes.stdout > 0;
      if (shown.length < lines.length || partial) {
        const total = partial ? `more than ${lines.length}` : String(lines.length);
        shown.push(
          `(Showing ${shown.length} of ${total} matching lines; narrow the pattern, path or glob to see the rest.)`,
        );
      }
      if (result.exitCode !== 0) shown.push(`(rg reported: ${result.stderr.trim().split('\n')[0] ?? ''})`);
      return { content: shown.join('\n') };
    },
  };
}
