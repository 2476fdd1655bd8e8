import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exactIntegers, stringifyJson } from '../src/json.js';

test('bigints keep every digit; the rest matches JSON.stringify', () => {
  assert.equal(stringifyJson({ a: 9223372036854775807n, b: [-9223372036854775808n, 1] }), '{"a":9223372036854775807,"b":[-9223372036854775808,1]}');
  const plain = { s: 'x"\u0000', n: 1.5, t: true, z: null, u: undefined, d: new Date(0), arr: [undefined, 2], nested: { k: 'v' } };
  assert.equal(stringifyJson(plain), JSON.stringify(plain));
  assert.equal(stringifyJson('\u0000bigint'), JSON.stringify('\u0000bigint'));
  assert.equal(stringifyJson({ a: { '\u0000bigint': '12' } }), '{"a":{"\\u0000bigint":"12"}}');
});

test('exactIntegers: an integer beyond 2^53 is a bigint with every digit, the rest as JSON.parse read it (decisions 3.2)', () => {
  const text = '{"changes":[{"petId":9007199254740993,"delta":-1},{"petId":-9223372036854775808,"quantity":1.5e3,"x":"12345678901234567890"}],"n":[1,true,null,{}]}';
  assert.deepEqual(exactIntegers(text, JSON.parse(text)), {
    changes: [
      { petId: 9007199254740993n, delta: -1 },
      { petId: -9223372036854775808n, quantity: 1500, x: '12345678901234567890' },
    ],
    n: [1, true, null, {}],
  });
  // Safe integers stay numbers; a number with a fraction or an exponent stays a double.
  const plain = ' { "a" : [ 9007199254740991 , 1.00000000000000001, 1e400, "\\"\\\\" ] } ';
  assert.deepEqual(exactIntegers(plain, JSON.parse(plain)), JSON.parse(plain));
  // A "__proto__" key stays an own key, as JSON.parse keeps it, never the object's prototype.
  const proto = '{"__proto__":{"a":12345678901234567890}}';
  const read = exactIntegers(proto, JSON.parse(proto)) as object;
  assert.deepEqual(Object.keys(read), ['__proto__']);
  assert.equal(Object.getPrototypeOf(read), Object.prototype);
  // Without a run of 16 digits the text is not read again: the same object comes back.
  const parsed: unknown = JSON.parse('{"a":1}');
  assert.equal(exactIntegers('{"a":1}', parsed), parsed);
});
