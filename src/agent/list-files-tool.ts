import { z } from 'zod';
import type { FileEntry } from '../../sandbox/sandbox.ts';
import type { Tool } from './tool.ts';
import { toolPath } from './tool-path.ts';

export type ListFilesToolOptions = { maxEntries?: number };

const ListFilesInput = z.object({
  path: z.string().optional().describe('Directory relative to the workspace root. Default: the root.'),
  recursive: z
    .boolean()
    .optional()
    .describe('List the whole tree below path (.git internals are skipped). Default false.'),
});
type ListFilesInput = z.infer<typeof ListFilesInput>;

export function createListFilesTool(options: ListFilesToolOptions = {}): Tool<ListFilesInput> {
  const maxEntries = options.maxEntries ?? 1_000;
  return {
    name: 'list_files',
    description:
      'List files and directories in the workspace. Directories end with "/", files show their size in bytes. ' +
      'Paths are relative to the workspace root.',
    inputSchema: ListFilesInput,
    async execute(input, ctx) {
      const path = toolPath(input.path ?? '.', ctx.sandbox.workdir);
      const entries = await ctx.sandbox.listFiles(path, { recursive: input.recursive ?? false, limit: maxEntries + 1 });
      if (entries.length === 0) return { content: `${path} is an empty directory.` };
      const shown = entries.slice(0, maxEntries).map(formatEntry);
      if (entries.length > maxEntries) {
        shown.push(
          `(Showing the first ${maxEntries} entries; there are more. List a subdirectory, or use search with a glob.)`,
        );
      }
      return { content: shown.join('\n') };
    },
  };
}

function formatEntry(entry: FileEntry): string {
  if (entry.type === 'dir') return `${entry.path}/`;
  if (entry.type === 'symlink') return `${entry.path} (symlink)`;
  return `${entry.path} (${entry.size} bytes)`;
}
