import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cartTotal, formatPrice, receiptLine } from '../shop.js';

test('formatPrice', () => {
  assert.equal(formatPrice(1999), '$19.99');
  assert.equal(formatPrice(5), '$0.05');
});

test('behaviour is unchanged', () => {
  assert.equal(receiptLine('tea', 250), 'tea: $2.50');
  assert.equal(cartTotal([{ cents: 250 }, { cents: 1 }]), 'Total: $2.51');
});
