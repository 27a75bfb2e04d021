import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prepareWorkspace } from '../../src/git/prepare-workspace.ts';
import { createRemote, git, type RemoteFixture } from './git-fixture.ts';

const log = pino({ level: 'silent' });

let fixture: RemoteFixture;
let dataDir: string;
beforeEach(async () => {
  fixture = await createRemote();
  dataDir = join(fixture.root, 'data');
});
afterEach(async () => {
  await fixture.cleanup();
});

describe('prepareWorkspace on a branch the remote already has (a pull request head)', () => {
  it('checks the branch out where it is, instead of creating it from the base', async () => {
    const mainTip = await fixture.remoteBranch('main');
    const featureTip = await fixture.pushCommit('feature.txt', 'feature\n', 'feature work', 'feature/login');
    const ws = join(dataDir, 'workspaces', 'pr');
    const result = await prepareWorkspace({
      repo: fixture.remote,
      baseBranch: 'main',
      branch: 'feature/login',
      workspaceDir: ws,
      dataDir,
      log,
      signal: AbortSignal.timeout(30_000),
    });
    expect(result).toEqual({ baseBranch: 'main', baseCommit: featureTip, reused: false });
    expect(featureTip).not.toBe(mainTip);
    expect(await git(ws, 'symbolic-ref', 'HEAD')).toBe('refs/heads/feature/login');
    expect(await git(ws, 'rev-parse', 'HEAD')).toBe(featureTip);
    expect(await git(ws, 'show', 'HEAD:feature.txt')).toBe('feature');
  });

  it('still creates a new branch from the base when the remote has no such branch', async () => {
    const mainTip = await fixture.remoteBranch('main');
    const ws = join(dataDir, 'workspaces', 'new');
    const result = await prepareWorkspace({
      repo: fixture.remote,
      branch: 'patchbay/new',
      workspaceDir: ws,
      dataDir,
      log,
      signal: AbortSignal.timeout(30_000),
    });
    expect(result.baseCommit).toBe(mainTip);
    expect(await git(ws, 'rev-parse', 'HEAD')).toBe(mainTip);
  });
});
