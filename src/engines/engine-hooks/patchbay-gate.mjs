// The PreToolUse hook for shell commands of Claude Code and Codex (the same hook contract), run in
// the sandbox from a read-only directory: asks Patchbay's gate on the host (through the engine
// relay, with the run's relay token) whether the command may run, waits while a person decides,
// and answers the engine. Anything unexpected denies: the command does not run.
import { setTimeout as sleep } from 'node:timers/promises';

/** The hook's answer: nothing lets the command run (Codex accepts no explicit allow); a denial says why. */
function answer(decision, reason) {
  if (decision === 'allow') return;
  const out = { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason };
  process.stdout.write(`${JSON.stringify({ hookSpecificOutput: out })}\n`);
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

async function ask(url, token, call) {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': token },
        body: JSON.stringify(call),
        signal: AbortSignal.timeout(120_000),
      });
      if (res.ok) return await res.json();
      if (res.status < 500 || attempt >= 5) return { decision: 'deny', reason: `Patchbay gate answered ${res.status}` };
    } catch (error) {
      if (attempt >= 5) return { decision: 'deny', reason: `Patchbay gate unreachable: ${error.message}` };
    }
    await sleep(1000);
  }
}

async function main() {
  const input = await readStdin();
  const given = input?.tool_input?.command ?? input?.tool_input?.cmd;
  const command = Array.isArray(given) ? given.join(' ') : given;
  // The engine's relay: Claude Code's is its Anthropic base URL and key, Codex's is named for the hook.
  const base = process.env.PATCHBAY_RELAY_URL ?? process.env.ANTHROPIC_BASE_URL;
  const token = process.env.PATCHBAY_RELAY_TOKEN ?? process.env.ANTHROPIC_API_KEY;
  if (typeof command !== 'string' || !base || !token) return answer('deny', 'Patchbay gate: no command or no relay');
  const call = { callId: String(input.tool_use_id ?? ''), command };
  for (;;) {
    const result = await ask(`${base.replace(/\/$/, '')}/gate`, token, call);
    if (result?.decision === 'allow') return answer('allow');
    if (result?.decision !== 'pending') return answer('deny', String(result?.reason ?? 'Patchbay gate: denied'));
  }
}

main().catch((error) => answer('deny', `Patchbay gate hook failed: ${error?.message ?? error}`));
