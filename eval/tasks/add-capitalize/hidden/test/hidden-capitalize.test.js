import assert from 'node:assert/strict';
import { test } from 'node:test';
import { capitalize, reverse } from '../strings.js';

test('capitalizes the first letter only', () => {
  assert.equal(capitalize('hello world'), 'Hello world');
});

test('an empty word stays empty', () => {
  assert.equal(capitalize(''), '');
});

test('reverse still works', () => {
  assert.equal(reverse('ab'), 'ba');
});
