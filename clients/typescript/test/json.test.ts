import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { NATIVE_JSON_SOURCE, parseJsonNative } from '../src/json-native.js';
import { parseJson, parseJsonLossless } from '../src/json.js';

/**
 * The typed client's two JSON parsers: lossless-json, and JSON.parse with the numbers' source text
 * where the platform gives it (Node 22 and later; not on Node 20). Each input goes through both, and
 * both must answer the same value, or both throw, so either may serve parseJson.
 */

const NODE_MAJOR = Number(process.versions.node.split('.')[0]);
const nativeSkip = NATIVE_JSON_SOURCE ? false : `JSON.parse passes revivers no source text on Node ${process.versions.node}: the native parser runs on Node 22 and later`;
if (nativeSkip) process.stderr.write(`Native JSON parser tests SKIPPED: ${nativeSkip}.\n`);

const INT64_MIN = '-9223372036854775808';
const INT64_MAX = '9223372036854775807';

/** Inputs both parsers must read alike: the service's answers, at the int64 bounds, and numbers lossless-json treats specially. */
const INPUTS = [
  `[{"petId":${INT64_MIN},"quantity":0,"status":"sold"},{"petId":-1,"quantity":1,"status":"available"},{"petId":0,"quantity":2147483647,"status":"pending"}]`,
  `[{"petId":9007199254740991,"quantity":3,"status":"pending"},{"petId":9007199254740992,"quantity":4,"status":"available"},{"petId":9007199254740993,"quantity":7,"status":"available"},{"petId":${INT64_MAX},"quantity":2147483647,"status":"available"}]`,
  `{"petId":${INT64_MAX},"quantity":5,"status":"available"}`,
  `{"items":[{"petId":${INT64_MIN},"previousQuantity":8,"quantity":6,"at":"2026-11-22T10:04:05.120Z","keyId":"key_a","keyName":"till \\"2\\" \\u00e9","requestId":"r-1","reason":null}],"nextCursor":"h12"}`,
  '{"id":"key_0123","name":"warehouse","scopes":["inventory:read","inventory:write"],"expiresAt":null}',
  '{"code":"not_found","message":"Pet 9007199254740993 has no inventory entry.","status":404}',
  '[]',
  ' { "petId" : 9223372036854775808 , "x" : [ 1 , 2 ] } ',
  '{"petId":-9223372036854775809}',
  // Numbers outside int64 members: as numbers when exact, a bigint beyond 2^53, -0 and exponents as written.
  '{"a":9007199254740993,"b":-9007199254740993,"c":1.5,"d":-0,"e":0,"f":1e5,"g":1E-3,"h":0.1,"i":-0.0,"j":123456789012345678901234567890.5,"k":0.99999999999999999999,"l":1e21,"m":[0,-1,2147483648]}',
  '5',
  '9007199254740993',
  '"text"',
  'null',
  'true',
  '{"petId":"12","nested":{"petId":12,"list":[{"petId":9007199254740993}]}}',
  // A key given twice: the last value, as JSON.parse has it.
  '{"quantity":1,"quantity":2,"petId":1,"petId":9007199254740993}',
  '{"__proto__":{"admin":true},"petId":1}',
  // What each refuses: a petId that is no integer, a number that overflows or underflows a double, bad JSON.
  '{"petId":1.5}',
  '{"petId":1e3}',
  '{"quantity":1e400}',
  '{"quantity":-1e-400}',
  '{"quantity":01}',
  '{"petId":1,}',
  '[1,2',
  '',
  '{"a":"\u0001"}',
];

/** The value `parse` answers, or the class of error it throws: what the two parsers must agree on. */
function outcome(parse: (text: string) => unknown, text: string): { value: unknown } | { throws: string } {
  try {
    return { value: parse(text) };
  } catch (err) {
    return { throws: err instanceof Error ? err.name : typeof err };
  }
}

describe('client JSON parsers', () => {
  test('the platform test finds source text where JSON.parse gives it (Node 22 and later); parseJson is lossless-json, the faster one', () => {
    assert.equal(NATIVE_JSON_SOURCE, NODE_MAJOR >= 22);
    assert.equal(parseJson, parseJsonLossless);
  });

  test('lossless-json: int64 members as bigints from their digits, other numbers as numbers', () => {
    assert.deepEqual(parseJsonLossless(INPUTS[1]!), [
      { petId: 9007199254740991n, quantity: 3, status: 'pending' },
      { petId: 9007199254740992n, quantity: 4, status: 'available' },
      { petId: 9007199254740993n, quantity: 7, status: 'available' },
      { petId: 9223372036854775807n, quantity: 2147483647, status: 'available' },
    ]);
    assert.deepEqual(parseJsonLossless(INPUTS[0]!), [
      { petId: -9223372036854775808n, quantity: 0, status: 'sold' },
      { petId: -1n, quantity: 1, status: 'available' },
      { petId: 0n, quantity: 2147483647, status: 'pending' },
    ]);
    assert.deepEqual(parseJsonLossless('{"quantity":1,"quantity":2}'), { quantity: 2 }, 'the last of a repeated key');
  });

  test('native: the same answer as lossless-json on every input, errors included', { skip: nativeSkip }, () => {
    for (const text of INPUTS) assert.deepStrictEqual(outcome(parseJsonNative, text), outcome(parseJsonLossless, text), text);
    // The bounds and 2^53+1, spelled out.
    assert.deepStrictEqual(parseJsonNative(INPUTS[1]!), parseJsonLossless(INPUTS[1]!));
    assert.equal((parseJsonNative(`{"petId":${INT64_MIN}}`) as { petId: bigint }).petId, -(2n ** 63n));
    assert.equal((parseJsonNative(`{"petId":${INT64_MAX}}`) as { petId: bigint }).petId, 2n ** 63n - 1n);
    assert.equal((parseJsonNative('{"petId":9007199254740993}') as { petId: bigint }).petId, 2n ** 53n + 1n);
    assert.ok(Object.hasOwn(parseJsonNative(INPUTS[17]!) as object, '__proto__'), '__proto__ is an own member, not the prototype');
  });

  test('native: the same answer as lossless-json on generated lists and arbitrary JSON', { skip: nativeSkip }, () => {
    const item = fc.record(
      {
        petId: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
        quantity: fc.integer({ min: 0, max: 2147483647 }),
        status: fc.constantFrom('available', 'pending', 'sold'),
      },
      { noNullPrototype: true },
    );
    fc.assert(
      fc.property(fc.array(item, { maxLength: 20 }), (items) => {
        const text = `[${items.map((i) => `{"petId":${i.petId},"quantity":${i.quantity},"status":"${i.status}"}`).join(',')}]`;
        assert.deepStrictEqual(parseJsonNative(text), items);
        assert.deepStrictEqual(parseJsonLossless(text), items);
      }),
    );
    fc.assert(
      fc.property(fc.json(), fc.boolean(), (json, asPetIds) => {
        // Renaming keys to petId puts int64 members everywhere, where arbitrary numbers may not be integers.
        const text = asPetIds ? json.replace(/"(?:[^"\\]|\\.)*"\s*:/g, '"petId":') : json;
        assert.deepStrictEqual(outcome(parseJsonNative, text), outcome(parseJsonLossless, text), text);
      }),
      { numRuns: 2000 },
    );
  });
});
