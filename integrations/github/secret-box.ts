import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { PatchbayError } from '../../src/core/errors.ts';

export type SecretBox = {
  seal(plaintext: string): string;
  open(sealed: string): string;
  /** A short-lived signed value (OAuth state): `payload.expiry.mac`. */
  sign(payload: string, ttlMs: number): string;
  /** The payload of a value made by sign, or undefined when it is forged or expired. */
  verify(signed: string): string | undefined;
};

/**
 * AES-256-GCM for secrets at rest (users' GitHub tokens) and HMAC for signed state, with separate
 * keys derived from PATCHBAY_SECRET_KEY by HKDF. Sealed text is `v1.<iv>.<tag>.<ciphertext>` in
 * base64url; a wrong key or a changed byte fails to open.
 */
export function createSecretBox(secret: string, now: () => number = Date.now): SecretBox {
  const derive = (info: string) => Buffer.from(hkdfSync('sha256', secret, 'patchbay', info, 32));
  const encKey = derive('secret-box/aes-256-gcm');
  const macKey = derive('secret-box/hmac');
  const mac = (text: string) => createHmac('sha256', macKey).update(text).digest('base64url');
  return {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', encKey, iv);
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [
        'v1',
        iv.toString('base64url'),
        cipher.getAuthTag().toString('base64url'),
        body.toString('base64url'),
      ].join('.');
    },
    open(sealed) {
      const [version, iv, tag, body] = sealed.split('.');
      if (version !== 'v1' || !iv || !tag || body === undefined)
        throw new PatchbayError('invalid_input', 'not a sealed secret');
      try {
        const decipher = createDecipheriv('aes-256-gcm', encKey, Buffer.from(iv, 'base64url'));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
      } catch (error) {
        throw new PatchbayError(
          'unauthorized',
          'a stored secret could not be opened (was PATCHBAY_SECRET_KEY changed?)',
          { cause: error },
        );
      }
    },
    sign(payload, ttlMs) {
      const text = `${Buffer.from(payload, 'utf8').toString('base64url')}.${now() + ttlMs}`;
      return `${text}.${mac(text)}`;
    },
    verify(signed) {
      const parts = signed.split('.');
      if (parts.length !== 3) return undefined;
      const [payload, expiry, given] = parts as [string, string, string];
      const expected = Buffer.from(mac(`${payload}.${expiry}`));
      const actual = Buffer.from(given);
      if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return undefined;
      if (!(Number(expiry) > now())) return undefined;
      return Buffer.from(payload, 'base64url').toString('utf8');
    },
  };
}
