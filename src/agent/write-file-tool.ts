import { z } from 'zod';
import type { Tool } from './tool.ts';
import { toolPath } from './tool-path.ts';

const WriteFileInput = z.object({
  path: z.string().min(1).describe('File path relative to the workspace root. Missing directories are created.'),
  content: z.string().describe('The complete new content of the file.'),
});
type WriteFileInput = z.infer<typeof WriteFileInput>;

export function createWriteFileTool(): Tool<WriteFileInput> {
  return {
    name: 'write_file',
    description:
      'Create a file or replace its whole content. Creates missing parent directories. ' +
      'To change part of an existing file, prefer edit_file.',
    inputSchema: WriteFileInput,
    async execute(input, ctx) {
      const path = toolPath(input.path, ctx.sandbox.workdir);
      await ctx.sandbox.writeFile(path, input.content);
      const lines =
        input.content === '' ? 0 : input.content.split('\n').length - (input.content.endsWith('\n') ? 1 : 0);
      return { content: `Wrote ${path} (${Buffer.byteLength(input.content)} bytes, ${lines} lines).` };
    },
  };
}
