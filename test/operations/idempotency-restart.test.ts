import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { BACKENDS, backendSkip, createTestDatabase } from '../support/backends.js';
import { BIN, startServerProcess } from '../support/process.js';

const run = promisify(execFile);

for (const backend of BACKENDS) {
  describe(`idempotency across a restart on ${backend}`, { skip: await backendSkip(backend) }, () => {
    test('a PATCH answered before a kill -9 is replayed by the restarted service, not applied again', async (t) => {
      const db = await createTestDatabase(backend, t);
      const env = { ...process.env, DATABASE_URL: db.databaseUrl };
      const key = (await run(BIN, ['keys', 'create', '--name', 'till', '--scope', 'inventory:write'], { env })).stdout.trim();
      await run(BIN, ['pets', 'add', '--pet-id', '9007199254740993', '--status', 'available', '--quantity', '1'], { env });
      const patch = (baseUrl: string, quantity: number) =>
        fetch(`${baseUrl}/v1/inventory/9007199254740993`, {
          method: 'PATCH',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'sale-1' },
          body: JSON.stringify({ quantity, reason: 'correction' }),
        });

      const before = await startServerProcess(t, { DATABASE_URL: db.databaseUrl });
      const first = await patch(before.baseUrl, 0);
      assert.equal(first.status, 200);
      const firstText = await first.text();
      before.proc.kill('SIGKILL');
      await before.exited;

      const after = await startServerProcess(t, { DATABASE_URL: db.databaseUrl });
      const retry = await patch(after.baseUrl, 0);
      assert.equal(retry.status, 200);
      assert.equal(await retry.text(), firstText);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
      const history = await fetch(`${after.baseUrl}/v1/inventory/9007199254740993/history`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(((await history.json()) as { items: unknown[] }).items.length, 1, 'applied once');
    });
  });
}
