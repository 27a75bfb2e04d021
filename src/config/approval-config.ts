import { z } from 'zod';
import { ApprovalRule, type ApprovalRules, RiskClass } from '../core/approval-rules.ts';
import { Autonomy, defaultAutonomy } from '../core/autonomy.ts';
import { PatchbayError } from '../core/errors.ts';
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

/** The approval settings of the environment. */
export const approvalEnvShape = {
  /**
   * The installation's autonomy: `full`, `ask-risky` (the default), `plan-first` or
   * `ask-before-push`. A repository's knowledge document and the requester's words come first.
   */
  AUTONOMY: z.preprocess(emptyAsUndefined, Autonomy.optional()),
  /** `off` is `AUTONOMY=full`: nothing waits for a person and the command policy refuses the worst outright. */
  APPROVALS: z.preprocess(emptyAsUndefined, z.enum(['on', 'off']).optional()),
  /** Per risk class, `always-allow`, `ask` or `refuse`: `publish=refuse,deploy=ask`. Unnamed classes ask. */
  APPROVAL_RULES: z.preprocess(emptyAsUndefined, ApprovalRulesText.default({})),
  /** Minutes a held command waits for a decision before it counts as denied. */
  APPROVAL_TIMEOUT_MINUTES: z.preprocess(emptyAsUndefined, z.coerce.number().positive().default(60)),
};

type ApprovalEnv = { [K in keyof typeof approvalEnvShape]?: z.infer<(typeof approvalEnvShape)[K]> } & {
  APPROVAL_RULES: ApprovalRules;
  APPROVAL_TIMEOUT_MINUTES: number;
};

/** The installation's approval settings: its autonomy, its rules per risk class and how long a request waits. */
export type ApprovalConfig = { autonomy: Autonomy; rules: ApprovalRules; timeoutMs: number };

/** The installation's approval settings; APPROVALS=off and AUTONOMY=full say the same, other pairs contradict. */
export function approvalConfigFromEnv(e: ApprovalEnv): ApprovalConfig {
  if (e.APPROVALS === 'off' && e.AUTONOMY !== undefined && e.AUTONOMY !== 'full')
    throw new PatchbayError(
      'config_invalid',
      `APPROVALS=off turns approvals off (AUTONOMY=full), but AUTONOMY=${e.AUTONOMY} asks for them: unset one of the two`,
    );
  const autonomy = e.AUTONOMY ?? (e.APPROVALS === 'off' ? 'full' : defaultAutonomy);
  return { autonomy, rules: e.APPROVAL_RULES, timeoutMs: Math.round(e.APPROVAL_TIMEOUT_MINUTES * 60_000) };
}
