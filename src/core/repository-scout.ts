import { z } from 'zod';

/** Where a learned rule came from: the pull requests that show it, and what was said, quoted. */
export const RuleEvidence = z.object({
  /** Pull request numbers, newest first (a sample when many show it). */
  pulls: z.array(z.number().int().positive()).max(20),
  /** Links to those pull requests or the check's details page. */
  links: z.array(z.string().max(500)).max(5),
  /** A closing comment or a check description, verbatim: data from the history, never an instruction. */
  quote: z.string().max(500).optional(),
});
export type RuleEvidence = z.infer<typeof RuleEvidence>;

const prefixPattern = /^[a-z0-9][a-z0-9._-]{0,30}\/$/;
const conventionalTypes = [
  'feat',
  'fix',
  'chore',
  'docs',
  'refactor',
  'test',
  'ci',
  'build',
  'perf',
  'style',
  'revert',
] as const;

/**
 * One rule the scout learned from a repository's recent pull requests. The fields the harness acts
 * on (a branch prefix, a title type, a limit) are checked shapes, so a branch name or a comment in
 * the history can never make the harness push to `main` or name anything outside them.
 */
export const ScoutRule = z.discriminatedUnion('kind', [
  /** Most merged branches start with `prefix` (`fix/`): the session's branch does too. */
  z.object({
    kind: z.literal('branch-prefix'),
    prefix: z.string().regex(prefixPattern),
    count: z.number(),
    of: z.number(),
  }),
  /** Most titles follow Conventional Commits; the commonest type titles Patchbay's PRs. */
  z.object({
    kind: z.literal('conventional-title'),
    type: z.enum(conventionalTypes),
    count: z.number(),
    of: z.number(),
  }),
  /** A status or check that runs on the pull requests (or a ruleset requires). */
  z.object({
    kind: z.literal('check'),
    name: z.string().min(1).max(200),
    /** A contributor licence agreement: Patchbay cannot sign one, so the thread is told. */
    cla: z.boolean(),
    /** The Developer Certificate of Origin: Patchbay adds `Signed-off-by` to its commits. */
    signOff: z.boolean(),
    required: z.boolean(),
    count: z.number(),
    of: z.number(),
  }),
  /** A bot or maintainer closes pull requests from authors with more than `limit` open. */
  z.object({ kind: z.literal('open-pr-limit'), limit: z.number().int().min(1).max(1000) }),
  /** Why a maintainer or bot closed pull requests unmerged: shown as quoted data, enforced by nobody. */
  z.object({ kind: z.literal('closing-note'), by: z.string().max(100) }),
]);
export type ScoutRule = z.infer<typeof ScoutRule>;

export const SourcedRule = z.object({
  rule: ScoutRule,
  /** The rule in a sentence, written by the scout from the rule's fields (never from the history's text). */
  text: z.string().max(300),
  evidence: RuleEvidence,
  /** When the scout saw it. */
  seen: z.string(),
});
export type SourcedRule = z.infer<typeof SourcedRule>;

/** What one scout pass found, kept in the repository's knowledge document. */
export const ScoutReport = z.object({
  at: z.string(),
  /** Pull requests read, and REST calls the pass made (its cost). */
  pullsRead: z.number().int().nonnegative(),
  calls: z.number().int().nonnegative(),
  rules: z.array(SourcedRule).max(30),
});
export type ScoutReport = z.infer<typeof ScoutReport>;

/**
 * Reads a repository's recent pull requests where an integration reaches it (GitHub through the
 * App). Undefined when the repository is not one it reaches. Must not throw for a repository it
 * cannot read: the caller runs without rules then.
 */
export type RepositoryScout = {
  readonly name: string;
  scout(repo: string, signal: AbortSignal): Promise<ScoutReport | undefined>;
};

/** The rules of one kind from a report. */
export function rulesOf<K extends ScoutRule['kind']>(
  rules: readonly SourcedRule[] | undefined,
  kind: K,
): Extract<ScoutRule, { kind: K }>[] {
  return (rules ?? []).flatMap((r) => (r.rule.kind === kind ? [r.rule as Extract<ScoutRule, { kind: K }>] : []));
}
