import { describe, expect, it } from 'vitest';
import { KnowledgeDocument } from '../../src/harness/knowledge/knowledge-document.ts';

const base = { setup: [], checks: [], conventions: [], instructions: [], sources: [] };

describe("the knowledge document's approvals section", () => {
  it('takes a rule per risk class, and is optional', () => {
    expect(
      KnowledgeDocument.parse({ ...base, approvals: { publish: 'refuse', deploy: 'always-allow' } }).approvals,
    ).toEqual({
      publish: 'refuse',
      deploy: 'always-allow',
    });
    expect(KnowledgeDocument.parse(base).approvals).toBeUndefined();
  });

  it('refuses an unknown class or rule', () => {
    expect(KnowledgeDocument.safeParse({ ...base, approvals: { publsh: 'refuse' } }).success).toBe(false);
    expect(KnowledgeDocument.safeParse({ ...base, approvals: { publish: 'maybe' } }).success).toBe(false);
  });
});
