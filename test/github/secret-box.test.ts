import { describe, expect, it } from 'vitest';
import { createSecretBox } from '../../integrations/github/secret-box.ts';

const key = 'k'.repeat(40);

describe('secret box', () => {
  it('seals with AES-GCM: opens with the same key, never shows the plaintext, refuses a changed byte or another key', () => {
    const box = createSecretBox(key);
    const sealed = box.seal('ghu_secret-token');
    expect(sealed).not.toContain('ghu_secret');
    expect(box.seal('ghu_secret-token')).not.toBe(sealed);
    expect(box.open(sealed)).toBe('ghu_secret-token');
    const tampered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA');
    expect(() => box.open(tampered)).toThrow(/could not be opened/);
    expect(() => createSecretBox('x'.repeat(40)).open(sealed)).toThrow(/could not be opened/);
  });

  it('signs state that expires and cannot be forged', () => {
    let now = 1_000;
    const box = createSecretBox(key, () => now);
    const signed = box.sign('slack:U1', 500);
    expect(box.verify(signed)).toBe('slack:U1');
    expect(box.verify(signed.replace(/^[^.]+/, Buffer.from('slack:U2').toString('base64url')))).toBeUndefined();
    now = 2_000;
    expect(box.verify(signed)).toBeUndefined();
  });
});
