import type { Sandbox } from '../../sandbox/sandbox.ts';
import type { CommandPolicy, LiftableClass } from './command-policy.ts';
import { classifyRisk, decideApproval, type RiskFinding } from './risk-classifier.ts';
import type { ToolContext, ToolOutput } from './tool.ts';

/** What the gate says about one command: held (refused, or waiting for a person, with the tool's answer), or run. */
export type GateOutcome =
  | { kind: 'held'; output: ToolOutput }
  /** `publishing`: a person approved it as publishing, or a rule always allows that (ExecOptions.secretWrites). */
  | { kind: 'run'; publishing: boolean };

/**
 * The one gate for every command the agent can cause to run: run_shell's command, the
 * screenshot tool's server, and any tool that runs a command. The approval rules decide first
 * (classifyRisk, decideApproval: run, hold for a person, refuse), then the plain command policy,
 * with the refusals a person's approval or an always-allow rule lifted. `label` names the command
 * in the answer ("Command refused: …", "Server command refused: …").
 */
export async function gateCommand(
  command: string,
  ctx: ToolContext,
  policy: CommandPolicy,
  label: string,
): Promise<GateOutcome> {
  const approval = ctx.approvals && (await approvalFor(command, ctx.approvals, ctx, label));
  if (approval?.kind === 'held') return approval;
  const decision = policy(command, { lifted: approval?.lifted });
  if (!decision.allowed)
    return { kind: 'held', output: { content: `${label} refused: ${decision.reason}`, isError: true } };
  return { kind: 'run', publishing: approval?.lifted.has('publish') ?? false };
}

export const LIFTABLE: ReadonlySet<string> = new Set<LiftableClass>(['publish', 'force-push', 'pipe-to-shell']);

type Approval = { kind: 'held'; output: ToolOutput } | { kind: 'cleared'; lifted: ReadonlySet<LiftableClass> };

/**
 * Whether a command may go on to the plain policy, and with which of its refusals lifted: a command
 * a person approved runs with its classes lifted; one the rules allow always runs so; one the rules
 * refuse is refused; one they ask about is held for a person.
 */
async function approvalFor(
  command: string,
  approvals: NonNullable<ToolContext['approvals']>,
  ctx: ToolContext,
  label: string,
): Promise<Approval> {
  const findings = await classifyInSandbox(command, ctx.sandbox);
  const lifted = new Set(findings.map((f) => f.class).filter((c): c is LiftableClass => LIFTABLE.has(c)));
  if (approvals.approvedCommand === command) return { kind: 'cleared', lifted };
  const decision = decideApproval(findings, ...approvals.rules);
  switch (decision.kind) {
    case 'run':
      return { kind: 'cleared', lifted };
    case 'refuse':
      return { kind: 'held', output: refusal(decision.finding, label) };
    case 'ask': {
      // Nothing is held (autonomy full): what the policy refuses outright stays refused, also where
      // only the classifier sees it (a publish inside `python -c`); the rest meets the plain policy.
      const unliftable = decision.findings.find((f) => LIFTABLE.has(f.class));
      if (approvals.holds === false && unliftable) return { kind: 'held', output: refusalAtFull(unliftable, label) };
      if (approvals.holds === false) return { kind: 'cleared', lifted: new Set() };
      return {
        kind: 'held',
        output: {
          content: 'Held for approval; waiting for a person to decide.',
          control: { kind: 'approval', command, findings: decision.findings },
        },
      };
    }
    default: {
      const _never: never = decision;
      return _never;
    }
  }
}

/**
 * classifyRisk reads the scripts a command runs; it reads synchronously, so the scripts it asks for
 * are fetched from the sandbox and it reads again, until it asks for nothing new (a few rounds).
 * `dir`: where the command runs, relative to the workspace (the checks' checkout), `.` by default.
 */
export async function classifyInSandbox(
  command: string,
  sandbox: Pick<Sandbox, 'readFile' | 'workdir'>,
  dir = '.',
): Promise<RiskFinding[]> {
  const scripts = new Map<string, string | undefined>();
  const workspace = dir === '.' ? sandbox.workdir : `${sandbox.workdir.replace(/\/$/, '')}/${dir}`;
  for (let round = 0; ; round++) {
    const wanted = new Set<string>();
    const readScript = (path: string) => {
      if (!scripts.has(path)) wanted.add(path);
      return scripts.get(path);
    };
    const findings = classifyRisk(command, { workspace, readScript });
    if (wanted.size === 0 || round === 3) return findings;
    for (const path of wanted) {
      const inDir = dir === '.' || path.startsWith('/') ? path : `${dir}/${path}`;
      scripts.set(path, await sandbox.readFile(inDir).catch(() => undefined));
    }
  }
}

function refusal(finding: RiskFinding, label: string): ToolOutput {
  return {
    content: `${label} refused: ${finding.reason} This installation or repository refuses ${finding.class} commands; they cannot be approved.`,
    isError: true,
  };
}

function refusalAtFull(finding: RiskFinding, label: string): ToolOutput {
  return {
    content: `${label} refused: ${finding.reason} This session runs with full autonomy, where nothing waits for a person, so ${finding.class} commands are refused unless the operator's rules always allow them.`,
    isError: true,
  };
}
