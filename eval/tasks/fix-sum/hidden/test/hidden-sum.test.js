import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sum } from '../math.js';

test('sums long lists', () => {
  assert.equal(sum([1, 2, 3, 4]), 10);
});

test('an empty list sums to 0', () => {
  assert.equal(sum([]), 0);
});
