import type { Sandbox } from '../../../sandbox/sandbox.ts';
import { classifyInSandbox, LIFTABLE } from '../../agent/command-gate.ts';
import { checkCommand, type LiftableClass } from '../../agent/command-policy.ts';
import { decideApproval } from '../../agent/risk-classifier.ts';
import type { ApprovalRules } from '../../core/approval-rules.ts';

/**
 * Why the harness must not run a setup or check command, or undefined when it may.
 * These commands run unattended, in a tree the agent wrote (its package.json scripts, its
 * Makefile's callers), so they meet the same gate as the agent's own commands: the approval rules
 * (installation, then repository) and the command policy. What would wait for a person is not run,
 * since no one is asked mid-gate; a rule that always allows a class lets it run.
 */
export async function unattendedRefusal(
  command: string,
  where: { sandbox: Pick<Sandbox, 'readFile' | 'workdir'>; dir: string },
  rules: readonly ApprovalRules[],
): Promise<string | undefined> {
  const findings = await classifyInSandbox(command, where.sandbox, where.dir);
  const decision = decideApproval(findings, ...rules);
  if (decision.kind === 'refuse')
    return `refused: ${decision.finding.reason} (the rules refuse ${decision.finding.class} commands)`;
  if (decision.kind === 'ask') {
    const classes = [...new Set(decision.findings.map((f) => f.class))].join(', ');
    return `not run: it would wait for a person's approval (${classes}: ${decision.findings[0]!.reason}), and the harness runs setup and checks unattended; an operator's rule (APPROVAL_RULES, the repository's approvals) can always allow it`;
  }
  const lifted = new Set(findings.map((f) => f.class).filter((c): c is LiftableClass => LIFTABLE.has(c)));
  const policy = checkCommand(command, { lifted });
  return policy.allowed ? undefined : `refused: ${policy.reason}`;
}
