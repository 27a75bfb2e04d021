import { describe, expect, it } from 'vitest';
import type { SessionEvent, StoredEvent } from '../../src/core/events.ts';
import { touchesUi, uiPagesOf } from '../../src/harness/screenshots/ui-pages.ts';

let seq = 0;
const stored = (event: SessionEvent): StoredEvent =>
  ({ seq: ++seq, at: new Date(0).toISOString(), event }) as StoredEvent;
const call = (callId: string, input: unknown, isError = false): StoredEvent[] => [
  stored({ type: 'tool-start', callId, name: 'screenshot', input }),
  stored({ type: 'tool-end', callId, name: 'screenshot', isError, output: '', durationMs: 1 }),
];

describe('which changes get before/after screenshots', () => {
  it.each([
    [['src/app.ts', 'README.md'], false],
    [['site/index.html'], true],
    [['styles/button.SCSS'], true],
    [['web/src/views/page.tsx'], true],
    [['App.vue'], true],
    [['Widget.svelte'], true],
    [['lib/button.jsx', 'package.json'], true],
    [['docs/style.md'], false],
    [[], false],
  ])('%j → %s', (paths, expected) => {
    expect(touchesUi(paths)).toBe(expected);
  });
});

describe('the pages to retake', () => {
  it('are the pages of screenshot calls that worked, unique by URL with the latest call winning, at most three', () => {
    const events = [
      ...call('a', { url: 'http://127.0.0.1:1/', server: 'old' }),
      ...call('b', { url: 'http://127.0.0.1:2/' }, true),
      stored({ type: 'tool-start', callId: 'x', name: 'run_shell', input: { command: 'ls' } }),
      ...call('c', { url: 'http://127.0.0.1:3/', width: 800 }),
      ...call('d', { url: 'http://127.0.0.1:4/' }),
      ...call('e', { url: 'http://127.0.0.1:1/', server: 'new' }),
      ...call('f', { nonsense: true }),
    ];
    expect(uiPagesOf(events)).toEqual([
      { url: 'http://127.0.0.1:3/', width: 800 },
      { url: 'http://127.0.0.1:4/' },
      { url: 'http://127.0.0.1:1/', server: 'new' },
    ]);
  });
});
