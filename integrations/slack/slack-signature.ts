import { createHmac, timingSafeEqual } from 'node:crypto';

/** Slack's replay window: requests stamped more than five minutes away from now are refused. */
export const MAX_SKEW_SECONDS = 300;

export type SignatureCheck = { ok: true } | { ok: false; reason: 'missing' | 'stale' | 'mismatch' };

/**
 * Slack's request signing (wire-formats §1.1): `v0=` + hex HMAC-SHA256 of `v0:<timestamp>:<raw body>`
 * with the signing secret, compared in constant time. Unlike Bolt's verifier, timestamps too far in
 * the future are refused as well as old ones.
 */
export function verifySlackSignature(input: {
  signingSecret: string;
  timestamp: string | undefined;
  signature: string | undefined;
  rawBody: string;
  nowSeconds: number;
}): SignatureCheck {
  const { timestamp, signature } = input;
  if (!timestamp || !signature || !/^\d+$/.test(timestamp)) return { ok: false, reason: 'missing' };
  if (Math.abs(input.nowSeconds - Number(timestamp)) > MAX_SKEW_SECONDS) return { ok: false, reason: 'stale' };
  const expected = Buffer.from(
    `v0=${createHmac('sha256', input.signingSecret).update(`v0:${timestamp}:${input.rawBody}`).digest('hex')}`,
  );
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected)
    ? { ok: true }
    : { ok: false, reason: 'mismatch' };
}
