import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hello } from '../hello.js';

test('the wording the requester chose', () => {
  assert.equal(hello('Ada'), 'Hi Ada, welcome back!');
});
