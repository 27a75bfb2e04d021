import type { InjectedFault } from '../fakes/chaos.ts';

/**
 * Which injected fault ended a failed session. Every fake names what a request concerns (the
 * repository, the Slack channel, the Linear agent session or issue, the task in a model request),
 * and chaos decides faults per subject, so a session's own faults are the same for a seed however
 * the sessions interleave. The fault that ended a session is its own last fault on a service its
 * error names; else its own last fault; else the last fault that named no subject (a token request,
 * say) on a service its error names. None of these: no transient fault explains the failure, which
 * is then a product bug or a refusal, and is reported as such.
 */
export type Attribution = { fault: InjectedFault; own: boolean } | undefined;

export function faultThatEnded(
  failure: { subjects: readonly string[]; error: string | null },
  injected: readonly InjectedFault[],
): Attribution {
  const named = servicesNamed(failure.error ?? '');
  const own = injected.filter((f) => f.subject !== undefined && failure.subjects.includes(f.subject));
  const ownNamed = own.filter((f) => named.has(f.service)).at(-1) ?? own.at(-1);
  if (ownNamed) return { fault: ownNamed, own: true };
  const shared = injected.filter((f) => f.subject === undefined && named.has(f.service)).at(-1);
  return shared && { fault: shared, own: false };
}

/** The services an error message names, by the words Patchbay's errors use for them. */
function servicesNamed(error: string): Set<string> {
  const words: [string, RegExp][] = [
    ['slack', /slack/i],
    ['github', /github|pull request|push|git /i],
    ['linear', /linear/i],
    ['anthropic', /anthropic|model|overloaded|rate.?limit/i],
  ];
  return new Set(words.filter(([, pattern]) => pattern.test(error)).map(([service]) => service));
}

/** One line for a report: the service, the kind of fault, the operation and what it concerned. */
export function describeAttribution(attribution: Attribution): string {
  if (!attribution) return 'no injected fault of its own: a product bug or a refusal';
  const { fault, own } = attribution;
  const about = fault.subject ? ` (${fault.subject})` : ' (no subject; the last such fault on that service)';
  return `${fault.service} ${fault.kind} on ${fault.operation}${about}${own ? '' : ', shared'}`;
}
