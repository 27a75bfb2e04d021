import type { Actor } from '../../src/core/actor.ts';
import type { StoredEvent } from '../../src/core/events.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';

export const sessionMarker = (sessionId: string) => `<!-- patchbay:session=${sessionId} -->`;

const sourceNames: Record<Actor['source'], string> = {
  slack: 'Slack',
  github: 'GitHub',
  linear: 'Linear',
  web: 'the web page',
  cli: 'the CLI',
  system: 'Patchbay',
};

/** How a person is named in a PR: their GitHub handle when known (a mention), else their name. */
function person(actor: Actor): string {
  return actor.githubLogin ? `@${actor.githubLogin}` : actor.name;
}

/** A PR title from the task: the session title without a leading bot mention. */
export function pullRequestTitle(session: Pick<SessionRecord, 'title'>, mention: string): string {
  const title = session.title
    .replace(new RegExp(`^\\s*${mention.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[\\s,:]*`, 'i'), '')
    .trim();
  const text = title || 'Changes by Patchbay';
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * The PR body, written from the task and the run: the result, what changed (diff stat), how it was
 * checked (the commands the agent ran and how they ended), who asked and where, the session link,
 * and `Fixes #N` for the issues the session came from.
 */
export function pullRequestBody(input: {
  session: SessionRecord;
  summary: string;
  events: StoredEvent[];
  sessionUrl: string;
  fixes: number[];
  /** The gate's evidence section for the head commit (checks, verdict, what could not be checked). */
  evidence?: string;
}): string {
  const { session, events } = input;
  const stat = [...events].reverse().find((e) => e.event.type === 'diff-updated');
  const statText = stat?.event.type === 'diff-updated' ? stat.event.stat : '';
  const starts = new Map<string, string>();
  const checks: string[] = [];
  for (const { event } of events) {
    if (event.type === 'tool-start' && event.name === 'run_shell') {
      const command = (event.input as { command?: unknown } | null)?.command;
      if (typeof command === 'string') starts.set(event.callId, command.split('\n')[0]!.slice(0, 160));
    }
    if (event.type === 'tool-end' && starts.has(event.callId))
      checks.push(`- ${event.isError ? '❌' : '✅'} \`${starts.get(event.callId)!.replace(/`/g, "'")}\``);
  }
  const steerers = new Map<string, Actor>();
  for (const { event } of events) {
    if (
      event.type === 'user-message' &&
      event.actor.source !== 'system' &&
      !(event.actor.source === session.requester.source && event.actor.id === session.requester.id)
    ) {
      steerers.set(`${event.actor.source}:${event.actor.id}`, event.actor);
    }
  }
  const requested = `Requested by ${person(session.requester)} via ${sourceNames[session.requester.source]}${
    steerers.size
      ? `, with ${[...steerers.values()].map((a) => `${person(a)} (${sourceNames[a.source]})`).join(', ')}`
      : ''
  }.`;
  return [
    '## Summary',
    '',
    input.summary.trim().slice(0, 6000) || 'Changes made by Patchbay.',
    '',
    '## What changed',
    '',
    statText ? `\`\`\`\n${statText.slice(0, 4000)}\n\`\`\`` : 'See the commits on this branch.',
    '',
    '## How it was checked',
    '',
    checks.length
      ? checks.slice(-12).join('\n')
      : 'The agent ran no commands to check this change; please review carefully.',
    '',
    ...(input.evidence ? [input.evidence, ''] : []),
    ...(input.fixes.length ? [input.fixes.map((n) => `Fixes #${n}`).join('\n'), ''] : []),
    '---',
    `${requested} [Patchbay session](${input.sessionUrl})`,
    '',
    sessionMarker(session.id),
  ].join('\n');
}
