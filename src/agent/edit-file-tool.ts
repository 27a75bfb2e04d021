import { z } from 'zod';
import type { Tool } from './tool.ts';
import { toolPath } from './tool-path.ts';

const EditFileInput = z.object({
  path: z.string().min(1).describe('File path relative to the workspace root.'),
  old_string: z
    .string()
    .min(1)
    .describe('The exact text to replace, including indentation. Must match the file exactly.'),
  new_string: z.string().describe('The replacement text.'),
  replace_all: z
    .boolean()
    .optional()
    .describe('Replace every occurrence instead of requiring exactly one. Default false.'),
});
type EditFileInput = z.infer<typeof EditFileInput>;

export function createEditFileTool(): Tool<EditFileInput> {
  return {
    name: 'edit_file',
    description:
      'Replace an exact piece of text in a file. old_string must occur exactly once (include surrounding lines to make ' +
      'it unique) unless replace_all is true. Read the file first so old_string matches character for character.',
    inputSchema: EditFileInput,
    async execute(input, ctx) {
      const path = toolPath(input.path, ctx.sandbox.workdir);
      if (input.old_string === input.new_string) {
        return { content: 'old_string and new_string are the same; nothing to change.', isError: true };
      }
      const text = await ctx.sandbox.readFile(path);
      let oldString = input.old_string;
      let newString = input.new_string;
      let starts = occurrences(text, oldString);
      // Models write \n; a file with CRLF endings still deserves a match.
      if (starts.length === 0 && text.includes('\r\n') && !oldString.includes('\r\n')) {
        oldString = oldString.replace(/\n/g, '\r\n');
        newString = newString.replace(/\n/g, '\r\n');
        starts = occurrences(text, oldString);
      }
      if (starts.length === 0) {
        return {
          content: `old_string was not found in ${path}. ${noMatchHint(text, input.old_string)}`,
          isError: true,
        };
      }
      if (starts.length > 1 && !input.replace_all) {
        const lines = starts.map((s) => lineOf(text, s));
        return {
          content:
            `old_string occurs ${starts.length} times in ${path} (lines ${lines.join(', ')}). ` +
            'Include more surrounding lines to make it unique, or set replace_all to true to change every occurrence.',
          isError: true,
        };
      }
      const updated = text.split(oldString).join(newString);
      await ctx.sandbox.writeFile(path, updated);
      const firstLine = lineOf(updated, starts[0]!);
      const count = starts.length;
      return {
        content: `Replaced ${count} occurrence${count === 1 ? '' : 's'} in ${path} (first at line ${firstLine}).`,
      };
    },
  };
}

/** Start offsets of non-overlapping occurrences, as split() would cut them. */
function occurrences(text: string, search: string): number[] {
  const starts: number[] = [];
  for (let i = text.indexOf(search); i !== -1; i = text.indexOf(search, i + search.length)) starts.push(i);
  return starts;
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

/** Points the model at the likely cause: whitespace, a stale copy, or the wrong file. */
function noMatchHint(text: string, oldString: string): string {
  const squash = (s: string) => s.replace(/\s+/g, ' ').trim();
  const fileLines = text.split('\n');
  const wanted = oldString
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  if (wanted.length > 0 && squash(text).includes(squash(oldString))) {
    const line = fileLines.findIndex((l) => l.trim() === wanted[0]) + 1;
    const where = line > 0 ? ` near line ${line}` : '';
    return `It matches if whitespace is ignored${where}: copy the exact indentation and line breaks from read_file.`;
  }
  const firstWanted = wanted[0];
  if (firstWanted !== undefined) {
    const line = fileLines.findIndex((l) => l.includes(firstWanted)) + 1;
    if (line > 0)
      return `Its first line appears at line ${line}, but the text after it differs. Read the file again and copy the exact text.`;
  }
  return 'Read the file again with read_file and copy the exact text; it may have changed.';
}
