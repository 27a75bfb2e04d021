import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isEven } from '../numbers.js';

test('isEven', () => {
  assert.equal(isEven(4), true);
});
