export { branchName, isValidBranchName, assertValidBranchName } from './branch-name.ts';
export { commitAll, patchbayCommitter, withCoAuthors, type CommitAllOptions, type CommitAllResult, type GitIdentity } from './commit-all.ts';
export { mirrorPath, normalizeRepo, resolveRepo, type RepoSource } from './mirror.ts';
export {
  prepareWorkspace,
  workspaceOriginUrl,
  type PrepareWorkspaceOptions,
  type PreparedWorkspace,
} from './prepare-workspace.ts';
export { pushBranch, type PushBranchOptions, type PushBranchResult } from './push-branch.ts';
export { redactCredentials, runHostGit, type HostGitOptions } from './host-git.ts';
