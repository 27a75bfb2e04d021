import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isLeapYear } from '../dates.js';

test('every fourth year', () => {
  assert.equal(isLeapYear(2024), true);
  assert.equal(isLeapYear(2023), false);
});

test('centuries are not, unless divisible by 400', () => {
  assert.equal(isLeapYear(1900), false);
  assert.equal(isLeapYear(2000), true);
});
