import { z } from 'zod';
import { runSandboxGit } from './sandbox-git.ts';
import { shellQuote } from './shell-quote.ts';
import type { Tool } from './tool.ts';
import { toolPath } from './tool-path.ts';

const GitDiffInput = z.object({
  path: z.string().optional().describe('Limit the diff to this file or directory, relative to the workspace root.'),
  staged: z
    .boolean()
    .optional()
    .describe('Show staged changes (git diff --staged) instead of unstaged ones. Default false.'),
});
type GitDiffInput = z.infer<typeof GitDiffInput>;

export function createGitDiffTool(): Tool<GitDiffInput> {
  return {
    name: 'git_diff',
    description:
      'Show uncommitted changes as a unified diff: unstaged by default, staged with staged=true. ' +
      'New untracked files are not in the diff; git_status lists them.',
    inputSchema: GitDiffInput,
    async execute(input, ctx) {
      const path = input.path === undefined ? undefined : toolPath(input.path, ctx.sandbox.workdir);
      const args = ['diff', '--no-color', '--no-ext-diff'];
      if (input.staged) args.push('--staged');
      if (path !== undefined) args.push('--', shellQuote(path));
      const result = await runSandboxGit(ctx, args.join(' '));
      if (result.isError) return result;
      if (result.content.trim() === '') {
        const which = input.staged ? 'staged' : 'unstaged';
        return {
          content: `No ${which} changes${path ? ` in ${path}` : ''}. Untracked files are not diffed; see git_status.`,
        };
      }
      // Cut once, by the registry, at the run's limit.
      return { content: result.content, cutHint: 'pass path to diff one file or directory at a time' };
    },
  };
}
