import { createSign } from 'node:crypto';
import type { FakeGitHub } from './fake-github.ts';

/** An App JWT as GitHub wants it (RS256, iss = App ID, at most ten minutes), signed with the fake's App key. */
export function appJwt(github: FakeGitHub): string {
  const now = Math.floor(Date.now() / 1000);
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const unsigned = `${part({ alg: 'RS256', typ: 'JWT' })}.${part({ iat: now - 30, exp: now + 540, iss: String(github.appId) })}`;
  return `${unsigned}.${createSign('RSA-SHA256').update(unsigned).sign(github.privateKey).toString('base64url')}`;
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
