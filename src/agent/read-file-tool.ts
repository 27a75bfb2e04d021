import { z } from 'zod';
import { DEFAULT_MAX_OUTPUT_CHARS } from './output-cap.ts';
import type { Tool } from './tool.ts';
import { toolPath } from './tool-path.ts';

export type ReadFileToolOptions = {
  /** Lines returned when the call gives no limit. */
  defaultLineLimit?: number | undefined;
  /** Longer lines are cut, so one minified line cannot fill the context. */
  maxLineChars?: number | undefined;
  maxOutputChars?: number | undefined;
};

const ReadFileInput = z.object({
  path: z.string().min(1).describe('File path relative to the workspace root.'),
  offset: z.number().int().min(1).max(10_000_000).optional().describe('First line to read, 1-based. Default 1.'),
  limit: z.number().int().min(1).max(100_000).optional().describe('Number of lines to read.'),
});
type ReadFileInput = z.infer<typeof ReadFileInput>;

export function createReadFileTool(options: ReadFileToolOptions = {}): Tool<ReadFileInput> {
  const defaultLimit = options.defaultLineLimit ?? 2_000;
  const maxLineChars = options.maxLineChars ?? 2_000;
  const maxOutputChars = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  return {
    name: 'read_file',
    description:
      'Read a text file from the workspace. Lines come back numbered ("  12\\tcode"); the numbers are not part of the file. ' +
      `Reads up to ${defaultLimit} lines by default; use offset and limit to page through long files.`,
    inputSchema: ReadFileInput,
    async execute(input, ctx) {
      const path = toolPath(input.path, ctx.sandbox.workdir);
      const text = await ctx.sandbox.readFile(path);
      if (text.includes('\0'))
        return { content: `${path} looks like a binary file (${text.length} characters); not shown.`, isError: true };
      if (text === '') return { content: `${path} is empty.` };
      const lines = text.split('\n');
      if (lines.at(-1) === '') lines.pop();
      const first = input.offset ?? 1;
      if (first > lines.length) {
        return {
          content: `offset ${first} is past the end of ${path}, which has ${lines.length} lines.`,
          isError: true,
        };
      }
      const last = Math.min(lines.length, first - 1 + (input.limit ?? defaultLimit));
      const width = String(last).length;
      const out: string[] = [];
      // Whole lines only, within the run's limit less room for the footer, so nothing cuts it again.
      const budget =
        ctx.maxOutputChars === undefined ? maxOutputChars : Math.min(maxOutputChars, ctx.maxOutputChars - 200);
      let size = 0;
      let shownLast = first - 1;
      for (let n = first; n <= last; n++) {
        let line = lines[n - 1]!;
        if (line.length > maxLineChars)
          line = `${line.slice(0, maxLineChars)} [... line cut: ${line.length - maxLineChars} more characters]`;
        const numbered = `${String(n).padStart(width)}\t${line}`;
        if (size + numbered.length + 1 > budget && out.length > 0) break;
        out.push(numbered);
        size += numbered.length + 1;
        shownLast = n;
      }
      if (first > 1 || shownLast < lines.length) {
        const more = shownLast < lines.length ? ` Use offset=${shownLast + 1} to read on.` : '';
        out.push(`(Showing lines ${first}-${shownLast} of ${lines.length} in ${path}.${more})`);
      }
      return { content: out.join('\n') };
    },
  };
}
