import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CONFIG_VARIABLES } from '../../src/config.js';
import { BACKENDS, backendSkip } from '../support/backends.js';
import { rawExchange, rawRequest, type RawAnswer } from '../support/raw-http.js';
import { byScale } from '../support/scale.js';
import { freePort } from '../support/process.js';
import { nearMisses, pets, startService } from '../support/service.js';

/**
 * After a run with keys of every kind (valid, read-only, revoked, expired, the other environment's,
 * and near misses of each: one character changed, truncated, extended, the other prefix) sent in
 * every way a client might, through both lanes and every kind of answer (200, 4xx, the failed-auth
 * throttle's 429): no key material in the server's logs (at trace level), in any answer's headers
 * or body, nor in /metrics (decisions 2.7).
 */

const ROUNDS = byScale(2, 10);
/** A run of this many characters of a key's random part anywhere counts as a leak; the key's 4-character hint never does. */
const WINDOW = 12;
/** Whether this build has the metrics endpoint (METRICS_PORT): the /metrics check runs once it has. */
const HAS_METRICS = 'METRICS_PORT' in CONFIG_VARIABLES;

for (const backend of BACKENDS) {
  describe(`secrets on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('no key material in logs, answers or metrics after a run with valid, revoked and near-miss keys', { timeout: byScale(120_000, 600_000) }, async (t) => {
      const metricsPort = await freePort();
      const service = await startService(t, backend, {
        items: pets(3),
        env: { LOG_LEVEL: 'trace', AUTH_FAILURES_PER_MINUTE: '25', METRICS_PORT: String(metricsPort) },
      });
      const { keys } = service;
      const valid = [keys.write, keys.read];
      const refused = [keys.revoked, keys.expired, keys.staging];
      const misses = [...valid, ...refused].flatMap(nearMisses);
      const answers: RawAnswer[] = [];
      const send = async (method: string, path: string, authorization: string | undefined, body?: string) => {
        const headers: [string, string][] = [['Host', 'inventory.test']];
        if (authorization !== undefined) headers.push(['Authorization', authorization]);
        if (body !== undefined) headers.push(['Content-Type', 'application/json'], ['Content-Length', String(Buffer.byteLength(body))]);
        answers.push(await rawExchange(service.server.port, rawRequest(`${method} ${path} HTTP/1.1`, headers, body ?? ''), { headOnly: method === 'HEAD' }));
      };
      // Every kind of request and answer for one way of presenting a key.
      const exercise = async (authorization: string | undefined) => {
        await send('GET', '/v1/inventory', authorization);
        await send('HEAD', '/v1/inventory', authorization);
        await send('GET', '/v1/inventory/1', authorization);
        await send('GET', '/v1/inventory/1/history?limit=2', authorization);
        await send('PATCH', '/v1/inventory/1', authorization, '{"quantity":3}');
        await send('PATCH', '/v1/inventory/1', authorization, '{"quantity":-1}');
        await send('PATCH', '/v1/inventory/404', authorization, '{"quantity":3}');
        await send('PATCH', '/v1/inventory/1', authorization, '{');
        await send('DELETE', '/v1/inventory/1', authorization);
        await send('GET', '/v1/nothing-here', authorization);
      };
      const presentations = (key: string) => [`Bearer ${key}`, `bearer ${key}`, `Bearer  ${key}`, `Token ${key}`, `Basic ${Buffer.from(`x:${key}`).toString('base64')}`, key];

      for (let round = 0; round < ROUNDS; round++) {
        // Valid keys first (the lane takes them once they are cached), then the refused ones, which
        // trip the failed-authentication throttle: its 429s, to valid keys too, are in the run.
        for (const key of valid) for (const authorization of presentations(key).slice(0, 2)) await exercise(authorization);
        for (const key of [...refused, ...misses]) for (const authorization of presentations(key)) await exercise(authorization);
        await exercise(undefined);
        for (const key of valid) await exercise(`Bearer ${key}`);
      }
      const statuses = new Set(answers.map((a) => a.status));
      for (const status of [200, 400, 401, 403, 404, 405, 429]) assert.ok(statuses.has(status), `the run had a ${status} answer`);

      const keysSent = [...valid, ...refused, ...misses];
      // A key inside Basic credentials travels base64-encoded: that form must not leak either.
      const secrets = [...keysSent, ...keysSent.map((key) => Buffer.from(`x:${key}`).toString('base64'))];
      const where: [string, string][] = [
        ['server stdout', service.server.stdout()],
        ['server stderr', service.server.stderr()],
        ...answers.map((a, i): [string, string] => [`answer ${i} (${a.status})`, `${JSON.stringify(a.headers)}\n${a.body.toString('latin1')}`]),
      ];
      if (HAS_METRICS) {
        const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
        assert.equal(metrics.status, 200, '/metrics answers');
        where.push(['/metrics', await metrics.text()]);
      } else {
        t.diagnostic('/metrics not checked: METRICS_PORT is not a setting of this build yet (the check turns on by itself once it is)');
      }
      assert.equal(leakedPart(keys.write, `"x":"${keys.write.slice(9, 9 + WINDOW)}"`), keys.write.slice(9, 9 + WINDOW).toLowerCase(), 'the search finds a leak');
      for (const [name, text] of where) {
        const leak = secrets.map((key) => leakedPart(key, text)).find((part) => part !== undefined);
        assert.equal(leak, undefined, `key material in ${name}`);
      }
      assert.ok(service.server.stdout().length > 0, 'the server logged the run');
      t.diagnostic(
        `${backend}: ${answers.length} answers, ${keysSent.length} keys and near misses, ` +
          `${service.server.stdout().split('\n').length} log lines searched: no run of ${WINDOW} characters of any key found`,
      );
    });
  });
}

/** A run of WINDOW characters of the key's random part (the whole part when shorter) found in `text`, case-insensitively. */
function leakedPart(key: string, text: string): string | undefined {
  const secret = key.replace(/^inv_(live|test)_/i, '');
  const lower = text.toLowerCase();
  const size = Math.min(WINDOW, secret.length);
  for (let i = 0; i + size <= secret.length; i++) {
    const part = secret.slice(i, i + size).toLowerCase();
    if (lower.includes(part)) return part;
  }
  return undefined;
}
