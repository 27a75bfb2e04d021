import { PatchbayError } from '../core/errors.ts';

/**
 * GitHub's refusal of a push that creates or changes a workflow file when the GitHub App (its
 * installation token) has no Workflows permission: "refusing to allow a GitHub App to create or
 * update workflow `.github/workflows/ci.yml` without `workflows` permission".
 */
const workflowRefusal =
  /refusing to allow a GitHub App to create or update workflow `?([^`\s]+)`? without `?workflows`? permission/;

/**
 * What a refused push means for the person who asked, when it is a refusal Patchbay knows (the
 * Workflows permission); undefined for anything else, which keeps git's own words.
 */
export function explainPushRefusal(gitMessage: string, branch: string, cause?: unknown): PatchbayError | undefined {
  const workflow = workflowRefusal.exec(gitMessage);
  if (!workflow) return undefined;
  return new PatchbayError(
    'unauthorized',
    `GitHub refused to push ${branch}: it changes the workflow file ${workflow[1]}, and the GitHub App does not have the Workflows permission. An owner of the App can grant it (the App's settings → Permissions & events → Repository permissions → Workflows: Read and write), then accept the new permission on the installation; after that, ask again. Or ask for the change without touching .github/workflows/.`,
    { cause },
  );
}
