import { z } from 'zod';

/**
 * The kinds of command a person decides on before it runs (issue 23). `unclear` is a command the
 * classifier cannot read to the end (a variable as a command or a risky tool's argument, a script
 * decoded or read from somewhere at run time, a script file it cannot open): it asks rather than
 * guesses. Approvals express intent; the sandbox stays the security boundary.
 */
export const RiskClass = z.enum(['force-push', 'publish', 'pipe-to-shell', 'deploy', 'delete-outside', 'unclear']);
export type RiskClass = z.infer<typeof RiskClass>;

/** What an installation or a repository says about a class: run it, ask a person, or never run it. */
export const ApprovalRule = z.enum(['always-allow', 'ask', 'refuse']);
export type ApprovalRule = z.infer<typeof ApprovalRule>;
export type ApprovalRules = Partial<Record<RiskClass, ApprovalRule>>;

/** Every class asks unless configured otherwise. */
export const defaultApprovalRules: Record<RiskClass, ApprovalRule> = {
  'force-push': 'ask',
  publish: 'ask',
  'pipe-to-shell': 'ask',
  deploy: 'ask',
  'delete-outside': 'ask',
  unclear: 'ask',
};
