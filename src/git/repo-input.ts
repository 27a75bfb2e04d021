import { stat } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { PatchbayError } from '../core/errors.ts';
import { resolveRepo, type RepoSource } from './mirror.ts';

const FORMS = 'a repository URL (https://host/owner/repo, ssh://git@host/owner/repo, git@host:owner/repo)';

/**
 * A repository as a person typed it (API body, CLI flag), checked before any session exists: a URL
 * in an accepted form (see repoUrlRefusal) or a local path, as `paths` says: `refused` (with the
 * message to give), `absolute` (the API with PATCHBAY_ALLOW_LOCAL_REPOS: a path on the server, spelt
 * out), or `existing` (the CLI: a directory that is there, relative to the working directory too).
 * Throws invalid_input with a message meant to be shown.
 */
export async function checkRepoInput(
  repo: string,
  paths: { refused: string } | 'absolute' | 'existing',
): Promise<RepoSource> {
  const source = resolveRepo(repo);
  if (source.kind === 'url') return source;
  const shown = JSON.stringify(repo.trim().slice(0, 200));
  if (typeof paths === 'object') throw new PatchbayError('invalid_input', paths.refused);
  if (paths === 'absolute' && !isAbsolute(repo.trim()) && !/^file:\/\//i.test(repo.trim())) {
    throw new PatchbayError('invalid_input', `${shown} is neither ${FORMS} nor an absolute path on the server`);
  }
  if (paths === 'absolute' && !(await stat(source.location).catch(() => undefined))?.isDirectory()) {
    throw new PatchbayError('invalid_input', `${shown} is not a directory on the server: check the path`);
  }
  if (paths === 'existing' && !(await stat(source.location).catch(() => undefined))?.isDirectory()) {
    throw new PatchbayError('invalid_input', `${shown} is neither ${FORMS} nor a directory on this machine`);
  }
  return source;
}
