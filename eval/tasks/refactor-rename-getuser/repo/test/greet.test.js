import assert from 'node:assert/strict';
import { test } from 'node:test';
import { greetUser } from '../greet.js';

test('greets by id', () => {
  assert.equal(greetUser(1), 'Hello, Ada!');
});
