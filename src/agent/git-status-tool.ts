import { z } from 'zod';
import { runSandboxGit } from './sandbox-git.ts';
import type { Tool } from './tool.ts';

const GitStatusInput = z.object({});
type GitStatusInput = z.infer<typeof GitStatusInput>;

export function createGitStatusTool(): Tool<GitStatusInput> {
  return {
    name: 'git_status',
    description:
      'Show the branch and the changed, staged and untracked files in the workspace repository (git status --short --branch).',
    inputSchema: GitStatusInput,
    async execute(_input, ctx) {
      const result = await runSandboxGit(ctx, 'status --short --branch --untracked-files=all');
      if (result.isError) return result;
      const lines = result.content.split('\n').filter((l) => l !== '');
      if (lines.length <= 1) return { content: `${lines[0] ?? ''}\nWorking tree clean.`.trim() };
      return { content: lines.join('\n') };
    },
  };
}
