import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { ERROR_CATALOGUE, ERROR_CODES } from '../../src/errors.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { bytesBehind, caseBytes, caseClass, fuzzCaseArb, isPublic, nearMissPicker, parseRefusal, type FuzzCase } from './fuzz-requests.js';
import { parseAnswer, rawExchange, type RawAnswer } from '../support/raw-http.js';
import { byScale } from '../support/scale.js';
import { pets, startService } from '../support/service.js';

/**
 * Property-based requests, sent as raw bytes over a socket to a server process: whatever the
 * method, target, headers, key and body, never a 5xx; every error is the Error object (decisions
 * 4.1) with a code from the catalogue (4.2); a request without a valid key is 401 before anything
 * else (2.2), except a request the parser refuses (an HTTP/2 preface among them), which gets 400
 * bad_request, or 431 headers_too_large for a head over the limit, whatever its key, and its
 * connection closes (7.3); every answer carries nosniff and X-Request-Id; and a refused request
 * stores nothing (the store version, bumped by every write, stays put).
 */

const RUNS = byScale(1000, 12_000);
const PETS = 20;
const CODES = new Set<string>(ERROR_CODES);

for (const backend of BACKENDS) {
  describe(`fuzz on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test(`${RUNS} raw requests: no 5xx, the Error shape, 401 first, nothing stored by a refusal`, { timeout: byScale(120_000, 900_000) }, async (t) => {
      // The failed-authentication throttle would turn every later case into 429: out of the way here.
      const service = await startService(t, backend, { items: pets(PETS), env: { AUTH_FAILURES_PER_MINUTE: '1000000', RATE_LIMIT_PER_MINUTE: '0' } });
      const nearMiss = nearMissPicker(service.keys);
      const statuses = new Map<string, number>();
      const classes = new Map<string, number>();
      const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
      let version = await service.store.entries.readVersion();
      let cases = 0;

      await assertProperty(
        fc.asyncProperty(fuzzCaseArb(PETS), async (c) => {
          cases++;
          const bytes = caseBytes(c, service.keys, nearMiss);
          const headBytes = bytes.indexOf('\r\n\r\n');
          const refusal = parseRefusal(c, headBytes);
          const behind = !refusal && bytesBehind(c);
          // A refused request is not known to be HEAD: its answer has a body. Bytes behind a request: what
          // follows its answer is read too (for a while: they may be the start of a request, still incomplete).
          const answer = await rawExchange(service.server.port, bytes, { headOnly: c.method === 'HEAD' && !refusal, waitMs: 10_000, thenWaitMs: behind ? 1000 : undefined });
          const after = await service.store.entries.readVersion();
          const describeCase = () => `${show(c, bytes)}\n=> ${answer.status || answer.missing} ${JSON.stringify(answer.headers)} ${answer.body.toString('latin1').slice(0, 300)}`;
          count(statuses, String(answer.status || answer.missing));
          count(classes, caseClass(c, headBytes));

          assert.ok(answer.status < 500, `a 5xx:\n${describeCase()}`);
          const previous = version;
          version = after;
          // PATCH, an adjustment and a batch write (decisions 5.11, 5.12); nothing else does.
          const wrote = (c.method === 'PATCH' || c.method === 'POST') && answer.status === 200;
          if (!wrote) assert.equal(after, previous, `a refused request changed the store:\n${describeCase()}`);
          else if (answer.headers['idempotent-replayed'] === undefined) assert.ok(after > previous, `a 200 change stored nothing:\n${describeCase()}`);

          assert.ok(answer.status !== 0, `no answer:\n${describeCase()}`);
          if (answer.status >= 400 && (c.method !== 'HEAD' || refusal)) assertErrorShape(answer, describeCase);
          assert.equal(answer.headers['x-content-type-options'], 'nosniff', `nosniff on every answer:\n${describeCase()}`);
          assert.ok(answer.headers['x-request-id'], `X-Request-Id on every answer:\n${describeCase()}`);
          if (refusal) {
            // Before a request exists (decisions 2.2, 7.3): that code whatever the key, not stored, and the connection closes.
            assert.equal(answer.status, ERROR_CATALOGUE[refusal].status, `a request the parser refuses:\n${describeCase()}`);
            assert.equal(errorCode(answer), refusal, `a request the parser refuses:\n${describeCase()}`);
            assert.equal(answer.headers.connection, 'close', `a refused request's connection closes:\n${describeCase()}`);
            assert.equal(answer.headers['cache-control'], 'no-store', describeCase());
            return;
          }
          assert.notEqual(answer.status, 431, `431 for a head under the limit:\n${describeCase()}`);
          if (behind) {
            await assertBytesBehind(answer, async () => version === (await service.store.entries.readVersion()), describeCase);
            count(classes, `bytes behind the request, then: ${answer.after?.length ? 'a 400' : answer.headers.connection === 'close' ? 'closed' : 'nothing yet'}`);
          }
          const validKey = c.keyKind === 'write' || c.keyKind === 'read';
          if (!validKey && !isPublic(c)) assert.equal(answer.status, 401, `not 401 without a valid key:\n${describeCase()}`);
          if (answer.status === 401) assert.match(answer.headers['www-authenticate'] ?? '', /^Bearer realm="inventory"/, describeCase());
          // A request that parses is 400 bad_request only for want of Host (HTTP/1.1); every other 400 names what is wrong.
          if (answer.status === 400 && c.method !== 'HEAD' && errorCode(answer) === 'bad_request') {
            assert.ok(c.host === 'none' && c.version === 'HTTP/1.1', `bad_request for a request that parses:\n${describeCase()}`);
          }
        }),
        { numRuns: RUNS, verbose: false },
      );
      assert.equal(service.server.proc.exitCode, null, 'the server is still running');
      t.diagnostic(`${cases} cases (with shrinking) on ${backend}`);
      t.diagnostic(`by class: ${JSON.stringify(Object.fromEntries([...classes].sort()))}`);
      t.diagnostic(`by answer: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
    });
  });
}

/** fc.assert, with the failing assertion's own message in the error the test reports. */
async function assertProperty<T>(property: fc.IAsyncProperty<T>, params: fc.Parameters<T>): Promise<void> {
  try {
    await fc.assert(property, params);
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    throw new Error(`${(err as Error).message}\n${cause instanceof Error ? cause.message : ''}`);
  }
}

function assertErrorShape(answer: RawAnswer, describeCase: () => string): void {
  assert.match(answer.headers['content-type'] ?? '', /^application\/json; charset=utf-8$/i, `error content type:\n${describeCase()}`);
  let body: unknown;
  try {
    body = JSON.parse(answer.body.toString('utf8'));
  } catch {
    assert.fail(`error body is not JSON:\n${describeCase()}`);
  }
  const { code, message, status, index } = body as Record<string, unknown>;
  // A batch's refusal of one change names it by index (decisions 5.12): the one field beyond the three.
  const fields = index === undefined ? ['code', 'message', 'status'] : ['code', 'index', 'message', 'status'];
  assert.deepEqual(Object.keys(body as object).sort(), fields, `Error shape:\n${describeCase()}`);
  if (index !== undefined) assert.ok(Number.isInteger(index) && (message as string).startsWith(`changes[${index as number}]: `), `Error index:\n${describeCase()}`);
  assert.equal(status, answer.status, `Error status:\n${describeCase()}`);
  assert.ok(typeof code === 'string' && CODES.has(code), `Error code from the catalogue:\n${describeCase()}`);
  assert.ok(typeof message === 'string' && message.length > 0, `Error message:\n${describeCase()}`);
}

/**
 * After the answer to a request with bytes behind it: nothing if that answer closed the connection
 * (nothing behind it is executed); else nothing yet (the bytes may be the start of a request) or a
 * 400 bad_request that closes the connection, as for any request the parser refuses; and nothing stored.
 */
async function assertBytesBehind(answer: RawAnswer, storeUnchanged: () => Promise<boolean>, describeCase: () => string): Promise<void> {
  const after = answer.after ?? Buffer.alloc(0);
  const describe = () => `${describeCase()}\nthen: ${after.toString('latin1').slice(0, 300)}`;
  if (answer.headers.connection === 'close') assert.equal(after.length, 0, `an answer after one that closed the connection:\n${describe()}`);
  if (after.length > 0) {
    const next = parseAnswer(after, true);
    assert.ok(next, `not an answer behind the first:\n${describe()}`);
    assert.equal(next.status, 400, `the bytes behind a request:\n${describe()}`);
    assertErrorShape(next, describe);
    assert.equal(errorCode(next), 'bad_request', `the bytes behind a request:\n${describe()}`);
    assert.equal(next.headers.connection, 'close', describe());
    assert.equal(next.end, after.length, `more than one answer behind the first:\n${describe()}`);
  }
  assert.ok(await storeUnchanged(), `the bytes behind a request changed the store:\n${describe()}`);
}

/** The code of an Error answer (its shape checked before). */
function errorCode(answer: RawAnswer): unknown {
  return (JSON.parse(answer.body.toString('utf8')) as { code?: unknown }).code;
}

/** A case as a reader can replay it: the bytes, long runs shortened. */
function show(c: FuzzCase, bytes: Buffer): string {
  const text = JSON.stringify(bytes.toString('latin1')).replace(/(.)\1{40,}/g, (run, ch: string) => `${ch}{x${run.length}}`);
  return `${c.keyKind}${c.h2Preface ? ' (HTTP/2 preface)' : c.malformed ? ' (malformed)' : ''}: ${text.slice(0, 1500)}`;
}
