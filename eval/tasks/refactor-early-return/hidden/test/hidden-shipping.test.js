import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { shipping } from '../shipping.js';

test('every rate is unchanged', () => {
  assert.equal(shipping(6000, 'US'), 0);
  assert.equal(shipping(4999, 'US'), 500);
  assert.equal(shipping(10000, 'FR'), 1000);
  assert.equal(shipping(100, 'FR'), 2000);
});

test('no nested if and no else left', () => {
  const source = readFileSync(new URL('../shipping.js', import.meta.url), 'utf8');
  assert.doesNotMatch(source, /else/);
});
