import type { Verdict } from '../../src/core/verdict.ts';
import { createSequenceProvider, type ScriptedProvider } from '../../src/models/scripted-provider.ts';

export function verdict(
  scores: [0 | 1 | 2, 0 | 1 | 2, 0 | 1 | 2, 0 | 1 | 2],
  summary: string,
  reasons: Partial<Record<keyof Omit<Verdict, 'summary'>, string>> = {},
): Verdict {
  const [relevance, completeness, correctness, scope] = scores;
  return {
    relevance: { score: relevance, reason: reasons.relevance ?? 'addresses the request' },
    completeness: { score: completeness, reason: reasons.completeness ?? 'complete' },
    correctness: { score: correctness, reason: reasons.correctness ?? 'checks support it' },
    scope: { score: scope, reason: reasons.scope ?? 'only what was asked' },
    summary,
  };
}

export const passingVerdict = verdict([2, 2, 2, 2], 'Does what was asked.');

/** A scripted verifier answering each call with the next verdict (the last repeats), through record_verdict. */
export function scriptedVerifier(...verdicts: Verdict[]): ScriptedProvider {
  return createSequenceProvider(verdicts.map((v) => ({ toolCalls: [{ name: 'record_verdict', input: v }] })));
}
