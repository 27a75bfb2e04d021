import { z } from 'zod';
import { ApprovalRule, RiskClass } from '../../core/approval-rules.ts';
import { Autonomy } from '../../core/autonomy.ts';
import { EgressAllowEntry } from '../../core/egress-allow.ts';
import { EngineName } from '../../engines/engine.ts';
import { ScoutReport } from '../../core/repository-scout.ts';

/** A command the knowledge document names, with the file it came from. */
export const KnownCommand = z.object({
  /** `install`, `test`, `lint`, `typecheck`, `build`, … */
  name: z.string().min(1).max(60),
  command: z.string().min(1).max(2000),
  /** The repo file the command was read from (or `edited by <name>` for a person's edit). */
  source: z.string().max(300),
});
export type KnownCommand = z.infer<typeof KnownCommand>;

/**
 * What Patchbay knows about a repository before a run: how to set it up and check it, its
 * conventions, the instructions its files give agents, and lessons from earlier sessions.
 */
export const KnowledgeDocument = z.object({
  setup: z.array(KnownCommand).max(20),
  checks: z.array(KnownCommand).max(20),
  /** Branch, commit and pull-request conventions (PR template, CONTRIBUTING excerpts). */
  conventions: z.array(z.string().max(4000)).max(20),
  /** Excerpts of AGENTS.md, CLAUDE.md, copilot instructions, README development sections. */
  instructions: z.array(z.object({ source: z.string(), text: z.string().max(6000) })).max(20),
  /** Files the document was built from. */
  sources: z.array(z.string()).max(100),
  /**
   * What this repository says about risky commands, per class (`publish: refuse`, `deploy: ask`),
   * over the installation's APPROVAL_RULES. Set by a person's edit; never extracted.
   */
  approvals: z.partialRecord(RiskClass, ApprovalRule).optional(),
  /** This repository's autonomy, over the installation's AUTONOMY; a requester's words win over it. */
  autonomy: Autonomy.optional(),
  /** The engine this repository's sessions run (`claude-code`, …), over AGENT_ENGINE; a requester's words win over it. Set by a person's edit. */
  engine: EngineName.optional(),
  /** Hosts people allowed for every session on this repository from a thread; never extracted, kept across rebuilds. */
  egressAllow: z.array(EgressAllowEntry).max(100).optional(),
  /**
   * Rules the scout learned from the repository's recent pull requests, each with its
   * evidence; kept across rebuilds from files. A person may edit or delete them like the rest.
   */
  scouted: ScoutReport.optional(),
});
export type KnowledgeDocument = z.infer<typeof KnowledgeDocument>;

/** A document with nothing in it yet (a scout pass that came before the first build from files). */
export const emptyKnowledge: KnowledgeDocument = {
  setup: [],
  checks: [],
  conventions: [],
  instructions: [],
  sources: [],
};

export const Lesson = z.object({ at: z.string(), text: z.string().max(1000) });
export type Lesson = z.infer<typeof Lesson>;

/**
 * The harness's gates from the document (setup it ran, checks it runs), for the system block. What
 * the repository's files say in their own words is `renderRepositoryText`, quoted, never here.
 */
export function renderKnowledge(doc: KnowledgeDocument): string {
  const list = (commands: readonly KnownCommand[]) =>
    commands.length
      ? commands.map((c) => `- ${c.name}: \`${c.command}\` (from ${c.source})`).join('\n')
      : '- (none found)';
  return [
    '# Repository knowledge',
    "Built by Patchbay from the repository's own files; the harness runs these checks on your commit when you finish.",
    '',
    '## Setup (already run by the harness before you started)',
    list(doc.setup),
    '',
    '## Checks (run by the harness on your final commit)',
    list(doc.checks),
  ].join('\n');
}
