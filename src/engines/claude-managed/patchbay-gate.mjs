// Claude Code's PreToolUse hook for Bash, run in the sandbox from a read-only directory: asks
// Patchbay's gate on the host (through the engine relay, with the run's relay token) whether the
// command may run, waits while a person decides, and answers Claude Code. Anything unexpected
// denies: the command does not run.
import { setTimeout as sleep } from 'node:timers/promises';

/** Claude Code's hook answer (hookSpecificOutput for PreToolUse). */
function answer(decision, reason) {
  const out = { hookEventName: 'PreToolUse', permissionDecision: decision };
  if (reason) out.permissionDecisionReason = reason;
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
  const command = input?.tool_input?.command;
  const base = process.env.ANTHROPIC_BASE_URL;
  const token = process.env.ANTHROPIC_API_KEY;
  if (typeof command !== 'string' || !base || !token) return answer('deny', 'Patchbay gate: no command or no relay');
  const call = { callId: String(input.tool_use_id ?? ''), command };
  for (;;) {
    const result = await ask(`${base.replace(/\/$/, '')}/gate`, token, call);
    if (result?.decision === 'allow') return answer('allow');
    if (result?.decision !== 'pending') return answer('deny', String(result?.reason ?? 'Patchbay gate: denied'));
  }
}

main().catch((error) => answer('deny', `Patchbay gate hook failed: ${error?.message ?? error}`));
