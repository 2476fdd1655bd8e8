import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boundedMemo } from '../../src/webhooks/bounded-memo.js';

test('a value is made once per key, and made again only after the memo filled up and started afresh', () => {
  const made: string[] = [];
  const upper = boundedMemo(2, (text: string) => {
    made.push(text);
    return text.toUpperCase();
  });
  assert.equal(upper('a'), 'A');
  assert.equal(upper('a'), 'A');
  assert.equal(upper('b'), 'B');
  assert.deepEqual(made, ['a', 'b']);
  assert.equal(upper('c'), 'C', 'a third key: the memo starts afresh with it');
  assert.equal(upper('c'), 'C');
  assert.equal(upper('a'), 'A');
  assert.deepEqual(made, ['a', 'b', 'c', 'a']);
});
