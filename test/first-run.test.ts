import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstRunBanner } from '../src/first-run.js';

test('the first-run banner names the dashboard and the API reference with their URLs, on the host the server listens on', () => {
  const cases: [string, string][] = [
    ['0.0.0.0', 'http://localhost:8080'],
    ['::', 'http://localhost:8080'],
    ['127.0.0.1', 'http://127.0.0.1:8080'],
    ['::1', 'http://[::1]:8080'],
  ];
  for (const [host, origin] of cases) {
    const lines = firstRunBanner('inv_live_x', { host, port: 8080, firstPetId: 1n }).split('\n');
    assert.ok(lines.includes(`The staff dashboard (sign in with the key): ${origin}/dashboard`), `${host}: ${lines.join('\n')}`);
    assert.ok(lines.includes(`The API reference: ${origin}/docs`), `${host}: ${lines.join('\n')}`);
    assert.ok(lines.includes(`    curl -s ${origin}/v1/inventory -H 'Authorization: Bearer inv_live_x'`), 'the curl lines on the same origin');
  }
});
