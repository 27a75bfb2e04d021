import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mean, median } from '../stats.js';

test('median of odd and even lists', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
});

test('mean still works', () => {
  assert.equal(mean([1, 2, 3]), 2);
});
