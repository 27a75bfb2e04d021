import { parseRepoUrl } from '../../src/core/repo-ref.ts';

/** A link to the branch on the repository's host (github.com or GitHub Enterprise); the bare name elsewhere. */
export function branchLink(repo: string, branch: string, repoBases: readonly string[]): string {
  const ref = parseRepoUrl(repo, repoBases);
  return ref
    ? `<${repo.replace(/\/+$/, '').replace(/\.git$/i, '')}/tree/${encodeURI(branch)}|${branch}>`
    : `\`${branch}\``;
}
