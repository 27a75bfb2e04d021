import { createSign } from 'node:crypto';
import { type Chaos, createChaos } from './chaos.ts';
import type { FakeGitHub } from './fake-github.ts';

export type ScriptedChaos = Chaos & {
  /** Replaces the faults still to come with these. */
  script(faults: Record<string, string[]>): void;
};

/**
 * A chaos that injects exactly the faults a test names, per `service operation`, in order ('-'
 * answers that request normally), each checked to be one the fake offers there; nothing
 * anywhere else. What it injects is recorded in `injected`, as `createChaos` records it.
 */
export function scriptedChaos(faults: Record<string, string[]> = {}): ScriptedChaos {
  const queue = (next: Record<string, string[]>) => new Map(Object.entries(next).map(([k, v]) => [k, [...v]]));
  let queues = queue(faults);
  const chaos = createChaos({ rate: 0, seed: 0 });
  return {
    ...chaos,
    roll<K extends string>(service: string, operation: string, kinds: readonly K[]): K | undefined {
      const kind = queues.get(`${service} ${operation}`)?.shift();
      if (kind === undefined || kind === '-') return undefined;
      if (!kinds.includes(kind as K))
        throw new Error(`${service} ${operation} does not offer ${kind}: ${kinds.join(', ')}`);
      chaos.injected.push({ service, operation, kind });
      return kind as K;
    },
    script(next) {
      queues = queue(next);
    },
  };
}

/** An installation token from the fake GitHub (POST /app/installations/{id}/access_tokens, as the App). */
export async function mintInstallationToken(github: FakeGitHub, installationId: number): Promise<string> {
  const res = await fetch(`${github.apiUrl}/app/installations/${installationId}/access_tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${appJwt(github)}`, accept: 'application/vnd.github+json' },
  });
  if (res.status !== 201) throw new Error(`minting a token was answered ${res.status}`);
  return ((await res.json()) as { token: string }).token;
}

/** An App JWT as GitHub wants it (RS256, iss = App ID, at most ten minutes). */
export function appJwt(github: FakeGitHub): string {
  const now = Math.floor(Date.now() / 1000);
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const unsigned = `${part({ alg: 'RS256', typ: 'JWT' })}.${part({ iat: now - 30, exp: now + 540, iss: String(github.appId) })}`;
  return `${unsigned}.${createSign('RSA-SHA256').update(unsigned).sign(github.privateKey).toString('base64url')}`;
}
