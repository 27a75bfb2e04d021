/**
 * The bench's two scripted reviewers (the verifier's model): each scores only from the verifier's
 * prompt, as a model would, and answers through record_verdict.
 */
import type { Verdict } from '../src/core/verdict.ts';
import type { ModelMessage } from '../src/models/model-provider.ts';
import type { ScriptedTurn } from '../src/models/scripted-provider.ts';

const section = (prompt: string, from: string, to: string) => {
  const start = prompt.indexOf(from);
  if (start < 0) return '';
  const end = prompt.indexOf(to, start);
  return prompt.slice(start, end < 0 ? undefined : end);
};

function answer(scores: [0 | 1 | 2, 0 | 1 | 2, 0 | 1 | 2, 0 | 1 | 2], summary: string): ScriptedTurn {
  const [relevance, completeness, correctness, scope] = scores;
  const v: Verdict = {
    relevance: { score: relevance, reason: 'relevance' },
    completeness: { score: completeness, reason: 'completeness' },
    correctness: { score: correctness, reason: summary },
    scope: { score: scope, reason: 'scope' },
    summary,
  };
  return { toolCalls: [{ name: 'record_verdict', input: v }] };
}

/** Passes whatever the checks did not fail: "the tests are green, ship it". */
export function trustingReviewer(messages: readonly ModelMessage[]): ScriptedTurn {
  const prompt = (messages[0] as { content: string }).content;
  const checks = section(prompt, '# Checks on this commit', '# Changed files');
  return /: (failed|timed-out)/.test(checks)
    ? answer([2, 2, 0, 2], 'checks fail')
    : answer([2, 2, 2, 2], 'checks pass');
}

/**
 * Parameters a changed function stops using: read from the diff alone (each file's old and new
 * side, which --function-context shows whole), a parameter of a new-side signature absent from the
 * new body but used in the old one.
 */
function droppedParameters(diff: string): string[] {
  const dropped: string[] = [];
  for (const file of diff.split(/^diff --git /m).slice(1)) {
    const lines = file.split('\n').filter((l) => /^[ +-]/.test(l) && !l.startsWith('+++') && !l.startsWith('---'));
    const side = (mark: string) =>
      lines
        .filter((l) => l[0] === ' ' || l[0] === mark)
        .map((l) => l.slice(1))
        .join('\n');
    const before = side('-');
    const after = side('+');
    for (const m of after.matchAll(/(?:function\s*[\w$]*\s*)?\(([^()]*)\)\s*(?:=>|\{)/g)) {
      const body = after.slice(m.index + m[0].length);
      const oldAt = before.indexOf(m[0]);
      const oldBody = oldAt >= 0 ? before.slice(oldAt + m[0].length) : '';
      for (const param of m[1]!
        .split(',')
        .map((p) => p.trim())
        .filter((p) => /^[A-Za-z_$][\w$]*$/.test(p))) {
        const used = (text: string) => new RegExp(`(^|[^\\w$])${param.replace(/\$/g, '\\$')}([^\\w$]|$)`).test(text);
        if (!used(body) && used(oldBody)) dropped.push(param);
      }
    }
  }
  return dropped;
}

/** Follows the verifier's instructions as far as a simple reader can. */
export function instructedReviewer(messages: readonly ModelMessage[]): ScriptedTurn {
  const prompt = (messages[0] as { content: string }).content;
  const task = prompt.slice(0, Math.max(0, prompt.indexOf('# Repository knowledge')));
  const named = new Set([...task.matchAll(/([\w-]+\.js)\b/g)].map((m) => m[1]!));
  const touched = [...prompt.matchAll(/^diff --git a\/(\S+)/gm)].map((m) => m[1]!);
  const checks = section(prompt, '# Checks on this commit', '# Changed files');
  const failed = /: (failed|timed-out)/.test(checks);
  // A removed assertion guts a test; a change not seen whole is not passed on trust.
  const gutted = /^-.*\bassert/m.test(section(prompt, '# Diff against the base', '\u0000'));
  const unproven = /: not-run|no checks are known/.test(checks) || prompt.includes('**Not seen whole:');
  // A file marked as defining the checks whose test script now passes whatever happens: no evidence.
  const emptied =
    /defines how the checks run/.test(section(prompt, '# Changed files', '# Diff against the base')) &&
    /^\+.*"test":\s*"(?:true|:|exit 0)"/m.test(section(prompt, '# Diff against the base', '\u0000'));
  const outside = touched.filter((f) => !named.has(f));
  const dropped = droppedParameters(section(prompt, '# Diff against the base', '\u0000'));
  const onTarget = touched.some((f) => named.has(f));
  const correctness = failed || gutted || emptied || dropped.length ? 0 : unproven ? 1 : 2;
  const scope = outside.length === 0 ? 2 : outside.length === 1 && onTarget ? 1 : 0;
  return answer(
    [onTarget ? 2 : 0, touched.length ? 2 : 0, correctness, scope],
    failed
      ? 'checks fail'
      : gutted
        ? 'removes a test assertion'
        : emptied
          ? 'the test script passes whatever happens'
          : dropped.length
            ? `drops ${dropped.join(', ')}`
            : unproven
              ? 'nothing proves it'
              : 'checks pass',
  );
}
