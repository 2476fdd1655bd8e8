import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { withExistingStore, withStore } from '../../src/cli/store-access.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { BACKENDS, backendSkip, createTestDatabase } from '../support/backends.js';

for (const backend of BACKENDS) {
  describe(`a command's store on ${backend}`, { skip: await backendSkip(backend) }, () => {
    it('is the ports the command names and no other, closed once the command is done', async (t) => {
      const db = await createTestDatabase(backend, t);
      const io = { env: { DATABASE_URL: db.databaseUrl } };
      const given = await withStore(io, ['keys', 'events'], async (ports) => ports);
      assert.deepEqual(Object.keys(given), ['keys', 'events']);
      await assert.rejects(given.keys.listApiKeys(), StoreUnavailableError);

      const read = await withExistingStore(io, ['history'], async (ports, config) => ({ ports: Object.keys(ports), databaseUrl: config.databaseUrl }));
      assert.deepEqual(read, { ports: ['history'], databaseUrl: db.databaseUrl });
    });
  });
}
