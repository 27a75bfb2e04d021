import { Verdict, verdictCriteria } from '../../core/verdict.ts';
import type { ToolSpec, TurnResult } from '../../models/model-provider.ts';

/**
 * The verifier's answer format. The tool's input schema is flat (one level, integer enums, no
 * `anyOf`) because grammar-constrained servers (llama.cpp) cannot constrain `anyOf`, and a model
 * that cannot call tools at all may answer with the same object as JSON in its text.
 */
const scoreField = (criterion: string) => ({
  [`${criterion}_score`]: { type: 'integer', enum: [0, 1, 2], description: `${criterion}: 0 no, 1 partly, 2 yes` },
  [`${criterion}_reason`]: { type: 'string', description: `one sentence on ${criterion}` },
});

const flatFields = verdictCriteria.flatMap((c) => [`${c}_score`, `${c}_reason`]);

export const recordVerdictTool: ToolSpec = {
  name: 'record_verdict',
  description:
    'Record your verdict on the change. Score each criterion 0 (no), 1 (partly) or 2 (yes) with a one-sentence reason: ' +
    'relevance (does it address what was asked), completeness (is all of it done), correctness (would it work; do the checks support it), ' +
    'scope (does it change only what the task needs; unrelated rewrites score 0). Then a short summary.',
  inputSchema: {
    type: 'object',
    properties: Object.assign({}, ...verdictCriteria.map(scoreField), { summary: { type: 'string' } }),
    required: [...flatFields, 'summary'],
    additionalProperties: false,
  },
};

/** The verdict as a JSON object in text, for a model that cannot call the tool. */
export const verdictJson = `{${flatFields.map((f) => `"${f}": ${f.endsWith('_score') ? '0|1|2' : '"…"'}`).join(', ')}, "summary": "…"}`;

/** What to ask for when the answer came back without a verdict: the tool, or the same object as text. */
const verdictAsText = `Call record_verdict, or, if you cannot call tools, answer with only this JSON object: ${verdictJson}`;

export type VerdictReading = { ok: true; verdict: Verdict } | { ok: false; problem: string };

/** The verdict in a verifier turn: record_verdict's input, else a JSON object in the text. */
export function readVerdict(result: TurnResult): VerdictReading {
  const call = result.toolCalls.find((c) => c.name === recordVerdictTool.name);
  const input = call ? call.input : jsonInText(result.content ?? '');
  if (input === undefined) return { ok: false, problem: `No verdict came back. ${verdictAsText}` };
  const parsed = Verdict.safeParse(nested(input));
  if (parsed.success) return { ok: true, verdict: parsed.data };
  const issues = parsed.error.issues.map((i) => `${i.path.join('_')}: ${i.message}`).join('; ');
  return { ok: false, problem: `Your verdict was invalid (${issues}). ${verdictAsText}` };
}

/** The flat answer in the shape of Verdict; a nested answer (the older schema) passes through. */
function nested(input: unknown): unknown {
  if (typeof input !== 'object' || input === null) return input;
  const flat = input as Record<string, unknown>;
  if (!verdictCriteria.some((c) => `${c}_score` in flat)) return input;
  return {
    ...Object.fromEntries(
      verdictCriteria.map((c) => [c, { score: flat[`${c}_score`], reason: flat[`${c}_reason`] ?? '' }]),
    ),
    summary: flat.summary,
  };
}

/** The last JSON object in a text answer, fenced or bare. */
function jsonInText(text: string): unknown {
  const fenced = [...text.matchAll(/```(?:json)?\s*(\{[\s\S]*?\})\s*```/g)].map((m) => m[1]!);
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  const candidates = [...fenced.reverse(), ...(start >= 0 && end > start ? [text.slice(start, end + 1)] : [])];
  for (const candidate of candidates) {
    try {
      return JSON.parse(candidate) as unknown;
    } catch {
      // Not JSON: try the next candidate.
    }
  }
  return undefined;
}
