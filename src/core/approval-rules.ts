import { z } from 'zod';

/**
 * The kinds of command a person decides on before it runs. `inline-code` is an
 * interpreter given code on its command line that starts programs or builds code at run time
 * (`node -e`, `python -c`); `unknown-package` fetches and runs a package the workspace does not
 * declare (`npx -y x`, `pnpm dlx`, `uvx`, `pipx run`). `unclear` is a command the
 * classifier cannot read to the end (a variable as a command or a risky tool's argument, a script
 * decoded or read from somewhere at run time, a script file it cannot open): it asks rather than
 * guesses. Approvals express intent; the sandbox stays the security boundary.
 */
export const RiskClass = z.enum([
  'force-push',
  'publish',
  'pipe-to-shell',
  'deploy',
  'delete-outside',
  'inline-code',
  'unknown-package',
  'unclear',
]);
export type RiskClass = z.infer<typeof RiskClass>;

/** What an installation or a repository says about a class: run it, ask a person, or never run it. */
export const ApprovalRule = z.enum(['always-allow', 'ask', 'refuse']);
export type ApprovalRule = z.infer<typeof ApprovalRule>;
export type ApprovalRules = Partial<Record<RiskClass, ApprovalRule>>;

/**
 * Every class asks unless configured otherwise, but publishing: it is refused at every autonomy
 * level unless an operator's rule (APPROVAL_RULES, a repository's `approvals`) says `ask` or
 * `always-allow`.
 */
export const defaultApprovalRules: Record<RiskClass, ApprovalRule> = {
  'force-push': 'ask',
  publish: 'refuse',
  'pipe-to-shell': 'ask',
  deploy: 'ask',
  'delete-outside': 'ask',
  'inline-code': 'ask',
  'unknown-package': 'ask',
  unclear: 'ask',
};
