import { describe, expect, it } from 'vitest';
import { capText } from '../../../src/agent/output-cap.ts';

describe('capText, the one cut of text handed to the model', () => {
  it('leaves text within the limit alone', () => {
    expect(capText('ok\n', 100, 'hint')).toBe('ok\n');
  });

  it('keeps head and tail within the limit, note included, and says exactly what was cut and how to see it', () => {
    const text = `${'a\n'.repeat(5_000)}MIDDLE${'z\n'.repeat(5_000)}`;
    const out = capText(text, 2_000, 'read it in ranges');
    expect(out.length).toBeLessThanOrEqual(2_000);
    expect(out.startsWith('a\na\n')).toBe(true);
    expect(out.endsWith('z\nz\n')).toBe(true);
    expect(out).not.toContain('MIDDLE');
    const note =
      /\n\[\.\.\. (\d+) characters \((\d+) lines\) cut from the middle of (\d+); read it in ranges \.\.\.\]\n/.exec(
        out,
      );
    expect(note).not.toBeNull();
    const [whole, cut, lines, total] = note!;
    expect(Number(total)).toBe(text.length);
    expect(Number(cut) + out.length - whole.length).toBe(text.length);
    const kept = out.replace(whole, '');
    expect(text.startsWith(kept.slice(0, 100))).toBe(true);
    expect(Number(lines)).toBe(text.slice(out.indexOf(whole), out.indexOf(whole) + Number(cut)).split('\n').length - 1);
  });

  it('a cut text fits the same limit again, so a second pass changes nothing', () => {
    const text = 'x'.repeat(50_000);
    const once = capText(text, 5_000, 'hint');
    expect(capText(once, 5_000, 'another hint')).toBe(once);
  });
});
