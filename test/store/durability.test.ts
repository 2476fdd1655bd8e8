import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { BACKENDS, backendSkip, createTestDatabase } from '../support/backends.js';
import { BIN, startServerProcess } from '../support/process.js';

const run = promisify(execFile);
const PETS = 8;

for (const backend of BACKENDS) {
  describe(`durability on ${backend} (decisions 5.2)`, { skip: await backendSkip(backend) }, () => {
    test('every acknowledged PATCH survives a kill -9 in the middle of a write load', async (t) => {
      const db = await createTestDatabase(backend, t);
      const env = { ...process.env, DATABASE_URL: db.databaseUrl };
      const key = (await run(BIN, ['keys', 'create', '--name', 'load', '--scope', 'inventory:write'], { env })).stdout.trim();
      for (let id = 1; id <= PETS; id++) await run(BIN, ['pets', 'add', '--pet-id', String(id), '--status', 'available'], { env });
      const server = await startServerProcess(t, { DATABASE_URL: db.databaseUrl });

      // Per pet, a chain of PATCHes with rising quantities; the server is killed while they run.
      const acknowledged = new Map<number, number>();
      let killed = false;
      const chains = Array.from({ length: PETS }, async (_, p) => {
        for (let quantity = 1; !killed; quantity++) {
          try {
            const res = await fetch(`${server.baseUrl}/v1/inventory/${p + 1}`, {
              method: 'PATCH',
              headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
              body: JSON.stringify({ quantity }),
            });
            if (res.status === 200) acknowledged.set(p + 1, quantity);
          } catch {
            return; // the connection died with the server
          }
        }
      });
      while ([...acknowledged.values()].reduce((a, b) => a + b, 0) < 200) await new Promise((done) => setTimeout(done, 5));
      server.proc.kill('SIGKILL');
      killed = true;
      await Promise.all(chains);
      await server.exited;

      const after = await startServerProcess(t, { DATABASE_URL: db.databaseUrl });
      const res = await fetch(`${after.baseUrl}/v1/inventory`, { headers: { authorization: `Bearer ${key}` } });
      const items = (await res.json()) as { petId: number; quantity: number }[];
      for (const { petId, quantity } of items) {
        // At least the last acknowledged value; at most one more (a write committed whose answer was lost).
        const acked = acknowledged.get(petId) ?? 0;
        assert.ok(quantity === acked || quantity === acked + 1, `pet ${petId}: stored ${quantity}, last acknowledged ${acked}`);
      }
      t.diagnostic(`${[...acknowledged.values()].reduce((a, b) => a + b, 0)} PATCHes acknowledged before kill -9; all found after restart`);
    });
  });
}
