import { describe, expect, it } from 'vitest';
import { compactionDue } from '../../src/harness/checkpoint/checkpoint-work.ts';

// When a checkpoint chain is stored whole again: its increments have to be many enough and weigh
// as much as the bundle they follow, or be so many that a restore would fetch too many bundles.
describe('compactionDue', () => {
  it.each([
    [{ increments: 0, incrementBytes: 0, baseBytes: 1000 }, false],
    [{ increments: 10, incrementBytes: 50_000, baseBytes: 1000 }, false], // heavy, but too few to be worth it yet
    [{ increments: 31, incrementBytes: 50_000, baseBytes: 1000 }, false],
    [{ increments: 32, incrementBytes: 999, baseBytes: 1000 }, false], // many, still lighter than the bundle
    [{ increments: 32, incrementBytes: 1000, baseBytes: 1000 }, true],
    [{ increments: 63, incrementBytes: 10, baseBytes: 1_000_000 }, false],
    [{ increments: 64, incrementBytes: 10, baseBytes: 1_000_000 }, true], // a restore fetches each one
  ])('%o → %s', (chain, due) => {
    expect(compactionDue({ wip: 'a'.repeat(40), ...chain })).toBe(due);
  });
});
