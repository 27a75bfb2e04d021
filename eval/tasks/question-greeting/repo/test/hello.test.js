import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hello } from '../hello.js';

test('names the person', () => {
  assert.match(hello('Ada'), /Ada/);
});
