import assert from 'node:assert/strict';
import { test } from 'node:test';
import { shipping } from '../shipping.js';

test('free in the US above $50', () => {
  assert.equal(shipping(6000, 'US'), 0);
});
