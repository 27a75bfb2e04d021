import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as users from '../users.js';
import { greetUser } from '../greet.js';

test('getUser replaces getUsr', () => {
  assert.equal(users.getUser(2), 'Grace');
  assert.equal('getUsr' in users, false);
});

test('greeting unchanged', () => {
  assert.equal(greetUser(2), 'Hello, Grace!');
});
