import assert from 'node:assert/strict';
import { test } from 'node:test';
import { slugify } from '../slug.js';

test('runs of spaces become one dash', () => {
  assert.equal(slugify('Hello   big  World'), 'hello-big-world');
});

test('one space still works', () => {
  assert.equal(slugify(' A b '), 'a-b');
});
