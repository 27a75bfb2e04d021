import assert from 'node:assert/strict';
import { test } from 'node:test';
import { range } from '../range.js';

test('an empty range when from is past to', () => {
  assert.deepEqual(range(3, 1), []);
});
