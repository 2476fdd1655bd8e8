import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stringifyJson } from '../src/json.js';

test('bigints keep every digit; the rest matches JSON.stringify', () => {
  assert.equal(stringifyJson({ a: 9223372036854775807n, b: [-9223372036854775808n, 1] }), '{"a":9223372036854775807,"b":[-9223372036854775808,1]}');
  const plain = { s: 'x"\u0000', n: 1.5, t: true, z: null, u: undefined, d: new Date(0), arr: [undefined, 2], nested: { k: 'v' } };
  assert.equal(stringifyJson(plain), JSON.stringify(plain));
  assert.equal(stringifyJson('\u0000bigint'), JSON.stringify('\u0000bigint'));
  assert.equal(stringifyJson({ a: { '\u0000bigint': '12' } }), '{"a":{"\\u0000bigint":"12"}}');
});
