import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reverse } from '../strings.js';

test('reverses', () => {
  assert.equal(reverse('abc'), 'cba');
});
