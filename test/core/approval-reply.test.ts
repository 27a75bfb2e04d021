import { describe, expect, it } from 'vitest';
import { parseApprovalReply } from '../../src/core/approval-reply.ts';

describe('written answers to an approval request', () => {
  it.each([
    ['approve', { decision: 'approved' }],
    ['Approve once', { decision: 'approved' }],
    ['  approve.', { decision: 'approved' }],
    ['deny', { decision: 'denied' }],
    ['Deny: not before the release', { decision: 'denied', reason: 'not before the release' }],
    ['deny we publish from CI only', { decision: 'denied', reason: 'we publish from CI only' }],
    ['approve it but also fix the tests', undefined],
    ['approved', undefined],
    ['denying is hard', undefined],
    ['please approve', undefined],
  ])('%j → %j', (text, expected) => {
    expect(parseApprovalReply(text)).toEqual(expected);
  });
});
