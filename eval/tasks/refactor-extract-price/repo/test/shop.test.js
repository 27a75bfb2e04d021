import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cartTotal, receiptLine } from '../shop.js';

test('formats lines and totals', () => {
  assert.equal(receiptLine('tea', 250), 'tea: $2.50');
  assert.equal(cartTotal([{ cents: 250 }, { cents: 1 }]), 'Total: $2.51');
});
