import { describe, expect, it } from 'vitest';
import { explainPushRefusal } from '../../src/git/push-refusals.ts';

describe('explainPushRefusal', () => {
  it.each([
    [
      'as the ref rejection reason (github.com)',
      " ! [remote rejected] patchbay/x -> patchbay/x (refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission)\nerror: failed to push some refs to 'https://github.com/o/r'",
      '.github/workflows/ci.yml',
    ],
    [
      'as remote: lines',
      'remote: refusing to allow a GitHub App to create or update workflow `.github/workflows/release.yaml` without `workflows` permission',
      '.github/workflows/release.yaml',
    ],
  ])('names the workflow and the permission to grant, %s', (_, message, file) => {
    const explained = explainPushRefusal(message, 'patchbay/x');
    expect(explained?.code).toBe('unauthorized');
    expect(explained?.message).toContain(`it changes the workflow file ${file}`);
    expect(explained?.message).toContain('Workflows: Read and write');
  });

  it("keeps git's own words for any other refusal", () => {
    expect(explainPushRefusal(' ! [remote rejected] x -> x (protected branch hook declined)', 'x')).toBeUndefined();
  });
});
