import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isLeapYear } from '../dates.js';

test('2024 is a leap year and 2023 is not', () => {
  assert.equal(isLeapYear(2024), true);
  assert.equal(isLeapYear(2023), false);
});
