import { z } from 'zod';

/**
 * How far a session may go before a person decides:
 * - `full`: nothing waits for a person; what the rules and the command policy refuse stays refused.
 * - `ask-risky`: risky commands (approval-rules.ts) are held for a person to approve.
 * - `plan-first`: as ask-risky, and the agent presents a plan and changes nothing until a person says "go".
 * - `ask-before-push`: as ask-risky, and the harness asks a person before it pushes the work.
 * Approvals express intent; the sandbox stays the security boundary.
 */
export const Autonomy = z.enum(['full', 'ask-risky', 'plan-first', 'ask-before-push']);
export type Autonomy = z.infer<typeof Autonomy>;

/** The level when nothing says otherwise. */
export const defaultAutonomy: Autonomy = 'ask-risky';

/** Where a session's level came from, most specific first. */
export const AutonomySource = z.enum(['session', 'repository', 'installation']);
export type AutonomySource = z.infer<typeof AutonomySource>;

/** The session's level: the requester's words over the repository's document over the installation's setting. */
export function resolveAutonomy(layers: {
  session?: Autonomy | undefined;
  repository?: Autonomy | undefined;
  installation: Autonomy;
}): { level: Autonomy; source: AutonomySource } {
  if (layers.session) return { level: layers.session, source: 'session' };
  if (layers.repository) return { level: layers.repository, source: 'repository' };
  return { level: layers.installation, source: 'installation' };
}

/** The words a requester may begin a task with, per level ("plan first: …"). */
const PHRASES: readonly [RegExp, Autonomy][] = [
  [/^plan[\s-]+first$/i, 'plan-first'],
  [/^ask[\s-]+before[\s-]+push(?:ing)?$/i, 'ask-before-push'],
  [/^(?:full[\s-]+autonomy|no[\s-]+approvals)$/i, 'full'],
  [/^ask[\s-]+(?:risky|for[\s-]+risky(?:[\s-]+commands)?)$/i, 'ask-risky'],
];

/** `autonomy plan-first`, `autonomy=full`: the level by its own name. */
const NAMED = /^autonomy[\s=]+(full|ask-risky|plan-first|ask-before-push)$/i;

/** A leading mention (`@patchbay`), kept in the text; then the phrase and its colon (or dash). */
const PREFIX = /^(\s*(?:@[\w.-]+(?:\[bot\])?[\s,]*)?)([a-z][a-z\s=-]{2,40}?)\s*[:\u2013\u2014]\s*/i;

/**
 * The level a task asks for in its first words ("plan first: add a health check", "@patchbay ask
 * before push: …"), and the task without those words. Text that starts otherwise is returned as
 * it is, with no level. Every surface's task reaches the session service's start, which reads it here.
 */
export function parseAutonomyPrefix(text: string): { autonomy?: Autonomy; text: string } {
  const match = PREFIX.exec(text);
  if (!match) return { text };
  const phrase = match[2]!.trim();
  const level = levelOf(phrase);
  if (!level) return { text };
  const rest = text.slice(match[0].length).trim();
  if (!rest) return { text };
  return { autonomy: level, text: `${match[1]!}${rest}` };
}

function levelOf(phrase: string): Autonomy | undefined {
  const named = NAMED.exec(phrase);
  if (named) return Autonomy.parse(named[1]!.toLowerCase());
  return PHRASES.find(([pattern]) => pattern.test(phrase))?.[1];
}

/**
 * Whether a reply to a plan says to start: "go", "go ahead", "lgtm", "approved", "yes, go". Anything
 * else is feedback on the plan.
 */
export function isGo(text: string): boolean {
  return /^\s*(?:(?:ok(?:ay)?|yes|yep|sure)[\s,!.]*)?(?:go(?:\s+ahead)?|lgtm|approved?|start|ship\s+it)\s*[.!]*\s*$/i.test(
    text,
  );
}

/** How a level is described on the page and in logs. */
export function describeAutonomy(level: Autonomy): string {
  switch (level) {
    case 'full':
      return 'full: nothing waits for a person; refusals stay refusals';
    case 'ask-risky':
      return 'ask-risky: risky commands wait for a person';
    case 'plan-first':
      return 'plan-first: the agent changes nothing until a person says go to its plan';
    case 'ask-before-push':
      return 'ask-before-push: a person approves each push';
    default: {
      const _never: never = level;
      return _never;
    }
  }
}

const SOURCE_WORDS: Record<AutonomySource, string> = {
  session: "the requester's words",
  repository: "the repository's knowledge document",
  installation: "the installation's AUTONOMY setting",
};

/** One line about a run's autonomy or a plan's go, for the CLI's log and the web page's timeline. */
export function autonomyNotice(
  event:
    | { type: 'autonomy-set'; level: Autonomy; source: AutonomySource }
    | { type: 'plan-approved'; actor: { name: string } },
): string {
  if (event.type === 'plan-approved') return `Plan approved by ${event.actor.name}: the agent may change files now`;
  return `Autonomy ${event.level} (from ${SOURCE_WORDS[event.source]}): ${describeAutonomy(event.level).split(': ')[1]}`;
}
