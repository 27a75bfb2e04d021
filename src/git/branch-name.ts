import { PatchbayError } from '../core/errors.ts';

const maxSlugLength = 40;

/**
 * The session's branch: `patchbay/<first 8 chars of the session id>-<slug of the title>`, or under
 * the repository's own prefix (`fix/`) when it has one. Always a valid branch name; the slug is
 * dropped when the title has no usable characters, and a prefix git would refuse is not used.
 */
export function branchName(sessionId: string, title: string, prefix = 'patchbay/'): string {
  const id = slugify(sessionId).replace(/-/g, '').slice(0, 8) || 'session';
  const slug = truncateAtWord(slugify(title), maxSlugLength);
  const name = slug ? `${prefix}${id}-${slug}` : `${prefix}${id}`;
  return prefix === 'patchbay/' || isValidBranchName(name) ? name : branchName(sessionId, title);
}

function slugify(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

function truncateAtWord(slug: string, max: number): string {
  if (slug.length <= max) return slug;
  const cut = slug.slice(0, max);
  const lastDash = cut.lastIndexOf('-');
  // Prefer a whole word unless that would throw most of the slug away.
  const trimmed = lastDash >= max / 2 ? cut.slice(0, lastDash) : cut;
  return trimmed.replace(/-+$/g, '');
}

/**
 * Whether `name` is accepted by `git check-ref-format --branch` (git's rules for refs/heads/<name>),
 * without running git. `@{-N}` shorthands are not branch names here.
 */
export function isValidBranchName(name: string): boolean {
  if (name.length === 0 || name.length > 255) return false;
  if (name.startsWith('-') || name === '@' || name === 'HEAD') return false;
  if (name.startsWith('/') || name.endsWith('/') || name.endsWith('.')) return false;
  if (name.includes('..') || name.includes('//') || name.includes('@{')) return false;
  // Control characters, DEL, space and the characters git reserves for revision syntax.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point.
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name)) return false;
  return name.split('/').every((part) => part.length > 0 && !part.startsWith('.') && !part.endsWith('.lock'));
}

/** Throws PatchbayError 'invalid_input' unless `name` is a valid branch name. */
export function assertValidBranchName(name: string, what = 'branch'): void {
  if (!isValidBranchName(name)) {
    throw new PatchbayError('invalid_input', `Invalid ${what} name ${JSON.stringify(name)}`);
  }
}
