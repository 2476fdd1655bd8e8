import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { withStore } from '../../src/cli/store-access.js';
import { hashKey, KEY_PREFIX, SCOPES } from '../../src/domain/api-key.js';
import { adminQuery, BACKENDS, backendSkip, createTestDatabase, type Backend, type TestDatabase } from '../support/backends.js';
import { itemOf } from '../support/store.js';
import { runCli, withoutProgress, type Run } from '../support/cli.js';

const BIN = fileURLToPath(new URL('../../bin/petstore-inventory', import.meta.url));
const DAY_MS = 86_400_000;


interface Sandbox {
  /** A temp dir for the files a test imports; the database is elsewhere (db). */
  dir: string;
  db: TestDatabase;
  env: Record<string, string>;
  /** Runs the CLI in-process with this sandbox's environment. */
  run(...argv: string[]): Promise<Run>;
  /** Writes a file in the sandbox and returns its path. */
  file(name: string, text: string): string;
}


/** A fresh database of the backend and a temp dir for files; process.env is never touched. */
async function sandbox(t: TestContext, backend: Backend, extraEnv: Record<string, string> = {}): Promise<Sandbox> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const db = await createTestDatabase(backend, t);
  const env = { DATABASE_URL: db.databaseUrl, ...extraEnv };
  return {
    dir,
    db,
    env,
    // An import's progress lines come only when it runs long (a loaded machine); these tests are about the rest of what it prints.
    run: async (...argv) => {
      const r = await runCli(env, ...argv);
      return argv[0] === 'pets' && argv[1] === 'import' ? { ...r, err: withoutProgress(r.err) } : r;
    },
    file(name, text) {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    },
  };
}

/** Whether anything opened the database: the SQLite file exists, or the PostgreSQL schema was created. */
async function databaseCreated(db: TestDatabase): Promise<boolean> {
  if (db.backend === 'sqlite') return existsSync(db.location);
  const rows = await adminQuery(`SELECT 1 FROM pg_namespace WHERE nspname = ${pg.escapeLiteral(db.location)}`);
  return rows.length > 0;
}

/** Everything the database holds, as it is kept: each SQLite file (main and WAL), or each PostgreSQL table's rows as text. */
async function storedContents(db: TestDatabase): Promise<{ name: string; content: Buffer | string }[]> {
  if (db.backend === 'sqlite') {
    const dir = dirname(db.location);
    return readdirSync(dir).map((name) => ({ name, content: readFileSync(join(dir, name)) }));
  }
  const tables = await adminQuery<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ${pg.escapeLiteral(db.location)}`,
  );
  assert.ok(tables.length > 0, 'the schema has tables');
  return Promise.all(
    tables.map(async ({ name }) => {
      const rows = await adminQuery<{ row: string }>(`SELECT t::text AS row FROM ${pg.escapeIdentifier(db.location)}.${pg.escapeIdentifier(name)} t`);
      return { name, content: rows.map((r) => r.row).join('\n') };
    }),
  );
}

/** An empty store where the sandbox's DATABASE_URL points: commands that only read never create one. */
async function createStore(s: Sandbox): Promise<void> {
  await withStore(s, [], async () => {});
}

function assertFailed(r: Run, code: number, message: RegExp): void {
  assert.equal(r.code, code, `exit code; stderr: ${r.err}`);
  assert.equal(r.out, '');
  assert.match(r.err, message);
  assert.match(r.err, /^petstore-inventory: .*\n$/m);
}

test('a bad DATABASE_URL is reported in one line without its password', async () => {
  const r = await runCli({ DATABASE_URL: 'mysql://user:secret@db/x' }, 'pets', 'list');
  assertFailed(r, 2, /^petstore-inventory: DATABASE_URL must be sqlite:PATH.*\(got mysql:\)\n$/);
  assert.ok(!r.err.includes('secret'));
});

for (const backend of BACKENDS) {
  describe(`CLI on ${backend}`, { skip: await backendSkip(backend) }, () => {
    // --- keys create ------------------------------------------------------------------------

    test('keys create prints the key alone and stores only its hash', async (t) => {
      const s = await sandbox(t, backend);
      const r = await s.run('keys', 'create', '--name', 'ci deploy');
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /^inv_live_[A-Za-z0-9_-]{43}\n$/);
      const key = r.out.trimEnd();
      assert.ok(key.startsWith(KEY_PREFIX.production));

      const record = await withStore(s, ['keys'], (store) => store.keys.findApiKeyByHash(hashKey(key)));
      assert.ok(record, 'the store holds the hash of the printed key');
      assert.equal(record.name, 'ci deploy');
      assert.equal(record.environment, 'production');
      assert.deepEqual(record.scopes, ['inventory:read'], 'least privilege by default');
      assert.equal(record.expiresAt, null);
      assert.match(r.err, new RegExp(`${record.id}.*"ci deploy".*inventory:read.*never expires`, 's'));
      assert.match(r.err, /shown only once/);

      // The key itself is nowhere in the database (SQLite: main file and WAL).
      for (const { name, content } of await storedContents(s.db)) {
        assert.ok(!content.includes(key), `${name} must not hold the key`);
      }
    });

    test('keys create --json prints one object with the key, and the key has the staging prefix in staging', async (t) => {
      const s = await sandbox(t, backend, { INVENTORY_ENV: 'staging' });
      const before = Date.now();
      const r = await s.run('keys', 'create', '--name', 'dashboard', '--json', '--scope', 'inventory:write', '--scope', 'inventory:read');
      assert.equal(r.code, 0, r.err);
      assert.ok(r.out.endsWith('}\n') && !r.out.slice(0, -1).includes('\n'), 'one line of JSON');
      const body = JSON.parse(r.out) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body), ['id', 'key', 'name', 'scopes', 'environment', 'createdAt', 'expiresAt']);
      assert.equal(body.name, 'dashboard');
      assert.equal(body.environment, 'staging');
      assert.deepEqual(body.scopes, ['inventory:read', 'inventory:write']);
      assert.equal(body.expiresAt, null);
      assert.match(body.key as string, /^inv_test_/);
      assert.ok(Date.parse(body.createdAt as string) >= before - 1000);

      const record = await withStore(s, ['keys'], (store) => store.keys.findApiKeyByHash(hashKey(body.key as string)));
      assert.equal(record?.id, body.id);
      assert.equal(record?.environment, 'staging');
    });

    test('keys create --expires-in sets the expiry that far ahead', async (t) => {
      const s = await sandbox(t, backend);
      const before = Date.now();
      const r = await s.run('keys', 'create', '--name', 'temp', '--expires-in', '30d', '--json');
      assert.equal(r.code, 0, r.err);
      const expiresAt = Date.parse((JSON.parse(r.out) as { expiresAt: string }).expiresAt);
      assert.ok(expiresAt >= before + 30 * DAY_MS && expiresAt <= Date.now() + 30 * DAY_MS, 'expires 30 days from now');

      const hours = await s.run('keys', 'create', '--name', 'short', '--expires-in', '12h');
      const record = await withStore(s, ['keys'], (store) => store.keys.findApiKeyByHash(hashKey(hours.out.trimEnd())));
      const ms = record!.expiresAt!.getTime() - record!.createdAt.getTime();
      assert.ok(Math.abs(ms - 12 * 3_600_000) < 5000, `12h after creation, got ${ms}ms`);
    });

    test('keys create refuses bad options with exit 2 and stores nothing', async (t) => {
      const s = await sandbox(t, backend);
      assertFailed(await s.run('keys', 'create', '--name', 'x', '--scope', 'admin'), 2, /--scope must be one of inventory:read, inventory:write, webhooks:manage, reservations:write \(got "admin"\)/);
      assertFailed(await s.run('keys', 'create', '--name', 'x', '--expires-in', '30'), 2, /--expires-in must be .*30d.* \(got "30"\)/);
      assertFailed(await s.run('keys', 'create', '--name', 'x', '--expires-in', '0d'), 2, /--expires-in/);
      assertFailed(await s.run('keys', 'create'), 2, /needs --name/);
      assertFailed(await s.run('keys', 'create', '--name', '   '), 2, /--name must not be empty/);
      assertFailed(await s.run('keys', 'create', '--name', 'n'.repeat(101)), 2, /--name must be at most 100 characters/);
      assertFailed(await s.run('keys', 'create', '--name', 'a\nb'), 2, /control characters/);
      assertFailed(await s.run('keys', 'create', '--name', 'x', '--bogus'), 2, /Unknown option '--bogus'/);
      assert.equal((await s.run('keys', 'create', '--name', 'n'.repeat(100))).code, 0);
      assert.equal((await withStore(s, ['keys'], (store) => store.keys.listApiKeys())).length, 1);
    });

    // --- keys list / revoke -----------------------------------------------------------------

    test('keys list shows a table without keys, and a hint when there are none', async (t) => {
      const s = await sandbox(t, backend);
      await createStore(s);
      const empty = await s.run('keys', 'list');
      assert.equal(empty.code, 0);
      assert.match(empty.out, /No API keys yet.*keys create --name/);
      assert.equal((await s.run('keys', 'list', '--json')).out, '[]\n');

      const first = (await s.run('keys', 'create', '--name', 'reader')).out.trimEnd();
      const second = (await s.run('keys', 'create', '--name', 'writer', '--scope', 'inventory:write', '--expires-in', '2w')).out.trimEnd();
      const r = await s.run('keys', 'list');
      assert.equal(r.code, 0);
      const lines = r.out.trimEnd().split('\n');
      assert.equal(lines.length, 3);
      assert.match(lines[0]!, /^ID\s+NAME\s+ENVIRONMENT\s+SCOPES\s+KEY\s+CREATED\s+LAST USED\s+EXPIRES\s+STATE$/);
      assert.match(lines[1]!, new RegExp(`^key_\\w+\\s+reader\\s+production\\s+inventory:read\\s+…${first.slice(-4)}\\s.*never\\s+never\\s+active$`));
      assert.match(lines[2]!, new RegExp(`^key_\\w+\\s+writer\\s+production\\s+inventory:write\\s+…${second.slice(-4)}\\s.*never\\s+\\d{4}-.*active$`));
      for (const key of [first, second]) assert.ok(!r.out.includes(key.slice(0, 20)));
    });

    test('keys list --json has no key material and reports each state', async (t) => {
      const s = await sandbox(t, backend);
      const key = (await s.run('keys', 'create', '--name', 'a')).out.trimEnd();
      await s.run('keys', 'create', '--name', 'b');
      // An already expired key, stored directly: the CLI only makes keys that expire in the future.
      await withStore(s, ['keys'], async (store) => {
        const record = (await store.keys.listApiKeys()).find((k) => k.name === 'b')!;
        // A moment after b: listings order by creation time, then id, and a random id may sort either side of this one.
        const createdAt = new Date(record.createdAt.getTime() + 1);
        await store.keys.insertApiKey({ ...record, id: 'key_expired', name: 'old', keyHash: 'f'.repeat(64), createdAt, expiresAt: new Date(Date.now() - 1000) });
      });
      const [a] = JSON.parse((await s.run('keys', 'list', '--json')).out) as { id: string }[];
      assert.equal((await s.run('keys', 'revoke', a!.id)).code, 0);

      const r = await s.run('keys', 'list', '--json');
      assert.equal(r.code, 0);
      assert.ok(!r.out.includes(hashKey(key)) && !r.out.includes(key) && !r.out.includes('keyHash'));
      const listed = JSON.parse(r.out) as Record<string, unknown>[];
      assert.deepEqual(
        listed.map((k) => [k.name, k.state]),
        [
          ['a', 'revoked'],
          ['b', 'active'],
          ['old', 'expired'],
        ],
      );
      assert.deepEqual(Object.keys(listed[0]!), ['id', 'name', 'environment', 'scopes', 'hint', 'createdAt', 'lastUsedAt', 'expiresAt', 'revokedAt', 'state']);
      assert.equal(listed[0]!.hint, key.slice(-4));
      assert.equal(typeof listed[0]!.revokedAt, 'string');
    });

    test('keys revoke revokes once; unknown ids and second revokes exit 1', async (t) => {
      const s = await sandbox(t, backend);
      const key = (await s.run('keys', 'create', '--name', 'to revoke')).out.trimEnd();
      const { id } = (await withStore(s, ['keys'], (store) => store.keys.findApiKeyByHash(hashKey(key))))!;

      const r = await s.run('keys', 'revoke', id);
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, new RegExp(`Revoked API key ${id}`));
      const record = await withStore(s, ['keys'], (store) => store.keys.findApiKeyByHash(hashKey(key)));
      assert.ok(record?.revokedAt instanceof Date);

      assertFailed(await s.run('keys', 'revoke', id), 1, new RegExp(`API key ${id} \\("to revoke"\\) is already revoked`));
      assertFailed(await s.run('keys', 'revoke', 'key_nope'), 1, /no API key has the id "key_nope"/);
      assertFailed(await s.run('keys', 'revoke'), 2, /exactly one key id/);
      assertFailed(await s.run('keys', 'revoke', id, id), 2, /exactly one key id/);
    });

    test('keys revoke never echoes a key passed instead of an id', async (t) => {
      const s = await sandbox(t, backend);
      const key = (await s.run('keys', 'create', '--name', 'secret')).out.trimEnd();
      const r = await s.run('keys', 'revoke', key);
      assertFailed(r, 2, /that is an API key, not a key id/);
      assert.ok(!r.err.includes(key.slice(KEY_PREFIX.production.length)));
      assert.equal((await withStore(s, ['keys'], (store) => store.keys.findApiKeyByHash(hashKey(key))))?.revokedAt, null);
    });

    // --- pets add / list --------------------------------------------------------------------

    test('pets add creates an entry and prints it with exact int64 digits', async (t) => {
      const s = await sandbox(t, backend);
      const r = await s.run('pets', 'add', '--pet-id', '9223372036854775807', '--status', 'sold', '--quantity', '3');
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out, '{"petId":9223372036854775807,"quantity":3,"status":"sold"}\n');

      const d = await s.run('pets', 'add', '--pet-id', '9007199254740993', '--status', 'pending');
      assert.equal(d.out, '{"petId":9007199254740993,"quantity":0,"status":"pending"}\n', 'quantity defaults to 0');

      assert.deepEqual(await withStore(s, ['entries'], (store) => itemOf(store, 9223372036854775807n)), {
        petId: 9223372036854775807n,
        quantity: 3,
        status: 'sold',
      });
    });

    test('pets add refuses a petId that already has an entry (exit 1) and bad values (exit 2)', async (t) => {
      const s = await sandbox(t, backend);
      await s.run('pets', 'add', '--pet-id', '5', '--status', 'available', '--quantity', '1');
      assertFailed(await s.run('pets', 'add', '--pet-id', '5', '--status', 'sold'), 1, /pet 5 already has an inventory entry/);
      assertFailed(await s.run('pets', 'add', '--pet-id', '9223372036854775808', '--status', 'sold'), 2, /--pet-id must be a decimal integer .* \(got "9223372036854775808"\)/);
      assertFailed(await s.run('pets', 'add', '--pet-id', '007', '--status', 'sold'), 2, /--pet-id must be/);
      assertFailed(await s.run('pets', 'add', '--pet-id', '6', '--status', 'lost'), 2, /--status must be one of available, pending, sold \(got "lost"\)/);
      assertFailed(await s.run('pets', 'add', '--pet-id', '6', '--status', 'sold', '--quantity=-3'), 2, /--quantity must be an integer from 0 to 2147483647 \(got "-3"\)/);
      assertFailed(await s.run('pets', 'add', '--pet-id', '6', '--status', 'sold', '--quantity', '2147483648'), 2, /--quantity must be/);
      assertFailed(await s.run('pets', 'add', '--pet-id', '6'), 2, /needs --pet-id ID and --status STATUS/);
      assert.deepEqual(await withStore(s, ['entries'], (store) => store.entries.listInventory()), [{ petId: 5n, quantity: 1, status: 'available' }]);
    });

    test('pets list prints a table ordered by petId, or JSON with exact digits', async (t) => {
      const s = await sandbox(t, backend);
      await createStore(s);
      assert.match((await s.run('pets', 'list')).out, /No inventory entries yet/);
      assert.equal((await s.run('pets', 'list', '--json')).out, '[]\n');
      for (const [id, qty, status] of [
        ['9007199254740993', '7', 'sold'],
        ['-9223372036854775808', '0', 'pending'],
        ['12', '2147483647', 'available'],
      ]) {
        assert.equal((await s.run('pets', 'add', '--pet-id', id!, '--quantity', qty!, '--status', status!)).code, 0);
      }
      const table = await s.run('pets', 'list');
      assert.equal(table.code, 0);
      assert.deepEqual(
        table.out.trimEnd().split('\n').map((line) => line.trim().split(/\s+/)),
        [
          ['PET', 'ID', 'QUANTITY', 'STATUS'],
          ['-9223372036854775808', '0', 'pending'],
          ['12', '2147483647', 'available'],
          ['9007199254740993', '7', 'sold'],
        ],
      );
      assert.equal(
        (await s.run('pets', 'list', '--json')).out,
        '[{"petId":-9223372036854775808,"quantity":0,"status":"pending"},{"petId":12,"quantity":2147483647,"status":"available"},' +
          '{"petId":9007199254740993,"quantity":7,"status":"sold"}]\n',
      );
    });

    // --- pets import ------------------------------------------------------------------------

    test('pets import reads CSV and JSON with exact int64 petIds', async (t) => {
      const s = await sandbox(t, backend);
      const csv = s.file('pets.csv', '\uFEFFpetId,quantity,status\r\n9223372036854775807, 4 ,available\r\n\r\n-1,0,"sold"\r\n');
      const r = await s.run('pets', 'import', csv);
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /^read 2, created 2, updated 0, unchanged 0, rejected 0 in \d+\.\d\d s \([\d,]+ rows\/s\)\n$/);

      const json = s.file('more.json', '[\n  {"petId": 9007199254740993, "quantity": 1, "status": "pending"}\n]\n');
      const j = await s.run('pets', 'import', json);
      assert.equal(j.code, 0, j.err);
      assert.match(j.out, /^read 1, created 1, updated 0, unchanged 0, rejected 0 in /);

      assert.equal(
        (await s.run('pets', 'list', '--json')).out,
        '[{"petId":-1,"quantity":0,"status":"sold"},{"petId":9007199254740993,"quantity":1,"status":"pending"},' +
          '{"petId":9223372036854775807,"quantity":4,"status":"available"}]\n',
      );
    });

    test('pets import is all or nothing: one bad line writes nothing', async (t) => {
      const s = await sandbox(t, backend);
      await s.run('pets', 'add', '--pet-id', '1', '--status', 'sold');
      const before = await withStore(s, ['entries'], (store) => store.entries.listInventory());

      const csv = s.file('bad.csv', 'petId,quantity,status\n10,1,sold\n11,2,sold\n12,-3,sold\n13,1,sold\n');
      const r = await s.run('pets', 'import', csv);
      assert.equal(r.code, 1);
      assert.match(r.out, /^read 4, created 0, updated 0, unchanged 0, rejected 1 in /);
      assert.equal(
        r.err,
        'line 4: quantity must be an integer from 0 to 2147483647 (got "-3")\n' +
          `petstore-inventory: ${csv}: 1 entry refused (listed above); nothing was imported\n`,
      );

      const json = s.file('bad.json', '[\n{"petId": 20, "quantity": 1, "status": "sold"},\n{"petId": "21", "quantity": 1, "status": "sold"}\n]');
      const j = await s.run('pets', 'import', json);
      assert.equal(j.code, 1);
      assert.match(j.err, /^item 2 \(line 3\): petId must be a number, not a string \(got "21"\)\n/);

      const dup = s.file('dup.csv', 'petId,quantity,status\n30,1,sold\n31,1,sold\n30,1,sold\n');
      const d = await s.run('pets', 'import', dup);
      assert.equal(d.code, 1);
      assert.match(d.err, /^line 4: duplicate petId 30, also at line 2\n/);

      assert.deepEqual(await withStore(s, ['entries'], (store) => store.entries.listInventory()), before);
    });

    test('pets import fails whole when a petId already has an entry, naming it', async (t) => {
      const s = await sandbox(t, backend);
      await s.run('pets', 'add', '--pet-id', '9007199254740993', '--status', 'sold');
      const file = s.file('clash.csv', 'petId,quantity,status\n1,1,sold\n9007199254740993,5,available\n2,1,sold\n');
      const r = await s.run('pets', 'import', file);
      assert.equal(r.code, 1);
      assert.match(r.out, /^read 3, created 0, updated 0, unchanged 0, rejected 1 in /);
      assert.equal(
        r.err,
        'line 3: pet 9007199254740993 already has an inventory entry (--upsert sets the quantity of existing entries)\n' +
          `petstore-inventory: ${file}: 1 entry refused (listed above); nothing was imported\n`,
      );
      assert.deepEqual(await withStore(s, ['entries'], (store) => store.entries.listInventory()), [{ petId: 9007199254740993n, quantity: 0, status: 'sold' }]);
    });

    test('pets import reports at most 20 problems', async (t) => {
      const s = await sandbox(t, backend);
      const rows = Array.from({ length: 25 }, (_, i) => `${i},x,sold`).join('\n');
      const r = await s.run('pets', 'import', s.file('many.csv', `petId,quantity,status\n${rows}\n`));
      assert.equal(r.code, 1);
      // The import opens (and so creates) the store before it reads the file; that line is not a problem.
      const lines = r.err.trimEnd().split('\n').filter((line) => !line.startsWith('Created a new store at '));
      assert.equal(lines.length, 21);
      assert.match(lines[19]!, /^line 21: quantity must be/);
      assert.match(lines[20]!, /: 25 entries refused \(the first 20 problems are listed above\); nothing was imported$/);
    });

    test('pets import: empty files, unknown formats, missing files and files that are not UTF-8', async (t) => {
      const s = await sandbox(t, backend);
      assertFailed(await s.run('pets', 'import', s.file('empty.json', '[]')), 1, /nothing to import/);
      assertFailed(await s.run('pets', 'import', s.file('empty.csv', '')), 1, /nothing to import/);
      assertFailed(await s.run('pets', 'import', s.file('header.csv', 'petId,quantity,status\n')), 1, /nothing to import/);
      const broken = await s.run('pets', 'import', s.file('broken.json', '[{"petId": 1,'));
      assert.equal(broken.code, 1);
      assert.match(broken.err, /^line 1: not valid JSON: expected a field name in double quotes, found the end of the file\n/);

      const txt = s.file('pets.txt', 'petId,quantity,status\n40,1,sold\n');
      assertFailed(await s.run('pets', 'import', txt), 2, /cannot tell the format .* pass --format csv or --format json/);
      assertFailed(await s.run('pets', 'import', txt, '--format', 'xml'), 2, /--format must be one of csv, json \(got "xml"\)/);
      assert.match((await s.run('pets', 'import', txt, '--format', 'csv')).out, /^read 1, created 1, /);

      assertFailed(await s.run('pets', 'import', join(s.dir, 'missing.csv')), 1, /cannot read .*missing\.csv: no such file/);
      assertFailed(await s.run('pets', 'import'), 2, /exactly one FILE/);

      assertFailed(await s.run('pets', 'import', s.dir, '--format', 'csv'), 1, /cannot read .*: it is a directory/);

      writeFileSync(join(s.dir, 'latin1.csv'), Buffer.from('petId,quantity,status\n1,1,s\xf6ld\n', 'latin1'));
      assertFailed(await s.run('pets', 'import', join(s.dir, 'latin1.csv')), 1, /is not UTF-8 text \(at about byte \d+\)/);
      assert.deepEqual(
        (await withStore(s, ['entries'], (store) => store.entries.listInventory())).map((i) => i.petId),
        [40n],
      );
    });

    // --- help and usage ---------------------------------------------------------------------

    test('--help of every command prints its usage and exits 0', async (t) => {
      const s = await sandbox(t, backend);
      const cases: [string[], RegExp][] = [
        [['--help'], /^Usage: petstore-inventory <command>/],
        [['keys', '--help'], /^Usage: petstore-inventory keys <command>[\s\S]*create[\s\S]*list[\s\S]*revoke/],
        [['keys', 'create', '--help'], /^Usage: petstore-inventory keys create --name NAME[\s\S]*Default: inventory:read only \(least privilege\)/],
        [['keys', 'list', '-h'], /^Usage: petstore-inventory keys list/],
        [['keys', 'revoke', '--help'], /^Usage: petstore-inventory keys revoke ID/],
        [['pets', '-h'], /^Usage: petstore-inventory pets <command>[\s\S]*add[\s\S]*list[\s\S]*import/],
        [['pets', 'add', '--help'], /^Usage: petstore-inventory pets add --pet-id ID --status STATUS/],
        [['pets', 'list', '--help'], /^Usage: petstore-inventory pets list/],
        [['pets', 'import', '--help'], /^Usage: petstore-inventory pets import FILE[\s\S]*checked whole before anything is written/],
      ];
      for (const [argv, usage] of cases) {
        const r = await s.run(...argv);
        assert.equal(r.code, 0, argv.join(' '));
        assert.match(r.out, usage, argv.join(' '));
        assert.equal(r.err, '', argv.join(' '));
      }
      for (const scope of SCOPES) assert.match((await s.run('keys', 'create', '--help')).out, new RegExp(scope));
      assert.equal(await databaseCreated(s.db), false, 'help opens no store');
    });

    test('unknown commands, subcommands and options exit 2', async (t) => {
      const s = await sandbox(t, backend);
      assertFailed(await s.run('feed'), 2, /^petstore-inventory: unknown command "feed": use serve, keys, pets/);
      assertFailed(await s.run('keys'), 2, /keys needs a command: use create, list, revoke/);
      assertFailed(await s.run('keys', 'delete'), 2, /keys has no command "delete"/);
      assertFailed(await s.run('pets', 'toString'), 2, /pets has no command "toString"/);
      assertFailed(await s.run('pets', 'list', '--csv'), 2, /Unknown option '--csv'/);
      assertFailed(await s.run('pets', 'list', 'extra'), 2, /Unexpected argument 'extra'/);
    });

    // --- the real binary --------------------------------------------------------------------

    test('the bin prints pets list --json with exact int64 digits', async (t) => {
      const s = await sandbox(t, backend);
      await s.run('pets', 'add', '--pet-id', '9223372036854775807', '--status', 'available', '--quantity', '2');
      await s.run('pets', 'add', '--pet-id', '9007199254740993', '--status', 'sold');
      const { stdout, stderr } = await promisify(execFile)(BIN, ['pets', 'list', '--json'], {
        env: { ...process.env, DATABASE_URL: s.env.DATABASE_URL },
      });
      assert.equal(stderr, '');
      assert.equal(stdout, '[{"petId":9007199254740993,"quantity":0,"status":"sold"},{"petId":9223372036854775807,"quantity":2,"status":"available"}]\n');
    });
  });
}
