import { z } from 'zod';
import { ApprovalRule, type ApprovalRules, RiskClass } from '../core/approval-rules.ts';
import { emptyAsUndefined } from './env-values.ts';

/** `publish=refuse,deploy=ask`: a rule per risk class, the rest left to the defaults (ask). */
const ApprovalRulesText = z.string().transform((text, ctx): ApprovalRules => {
  const rules: ApprovalRules = {};
  for (const pair of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [name, rule] = pair.split('=').map((p) => p.trim());
    const riskClass = RiskClass.safeParse(name);
    const parsedRule = ApprovalRule.safeParse(rule);
    if (!riskClass.success || !parsedRule.success) {
      ctx.addIssue({
        code: 'custom',
        message: `${JSON.stringify(pair)} is not class=rule (classes: ${RiskClass.options.join(', ')}; rules: ${ApprovalRule.options.join(', ')})`,
      });
      return z.NEVER;
    }
    rules[riskClass.data] = parsedRule.data;
  }
  return rules;
});

/** The approval settings of the environment (issue 23). */
export const approvalEnvShape = {
  /** `on`: risky commands are held for a person to approve in the thread; `off`: the command policy refuses the worst outright. */
  APPROVALS: z.preprocess(emptyAsUndefined, z.enum(['on', 'off']).default('off')),
  /** Per risk class, `always-allow`, `ask` or `refuse`: `publish=refuse,deploy=ask`. Unnamed classes ask. */
  APPROVAL_RULES: z.preprocess(emptyAsUndefined, ApprovalRulesText.default({})),
  /** Minutes a held command waits for a decision before it counts as denied. */
  APPROVAL_TIMEOUT_MINUTES: z.preprocess(emptyAsUndefined, z.coerce.number().positive().default(60)),
};

type ApprovalEnv = { [K in keyof typeof approvalEnvShape]: z.infer<(typeof approvalEnvShape)[K]> };

/** The installation's approval rules and timeout; undefined when approvals are off. */
export function approvalConfigFromEnv(e: ApprovalEnv): { rules: ApprovalRules; timeoutMs: number } | undefined {
  if (e.APPROVALS !== 'on') return undefined;
  return { rules: e.APPROVAL_RULES, timeoutMs: Math.round(e.APPROVAL_TIMEOUT_MINUTES * 60_000) };
}
