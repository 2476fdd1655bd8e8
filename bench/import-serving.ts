import { openStore } from '../src/store/open.js';
import { runCli, type CliRun } from './cli-run.js';
import { ChildRunner } from './child-runner.js';
import type { LoadJob } from './load-runner.js';
import type { LoadResult, LoadSpec } from './load-spec.js';
import { benchItems, seedDatabaseWith } from './seed.js';
import { startServer } from './servers.js';

/** Pets on sale before the import, 1..ON_SALE, the ones the PATCHes change: the imported file's pets come after them. */
export const ON_SALE = 100;
/** The PATCHes beside the import: the mixed load's pace, a shop selling steadily while its stock is loaded. */
export const IMPORT_PATCHES = { rate: 200, connections: 10 } as const;
/** Longer than any import: the PATCHes stop when the import exits, not at the end of a window. */
const UNTIL_STOPPED_SECONDS = 24 * 3600;

export interface ServedImport {
  imported: CliRun;
  /** The PATCHes sent from the import's start to its exit, and their answers. */
  patches: LoadResult;
}

/**
 * `pets import FILE` into a live store, as an operator would load stock into a running shop: the
 * service serves the same database (pinned to the server core, as deployed), with ON_SALE pets on
 * sale, and PATCHes of those pets go to it at a fixed pace from the import's start to its exit.
 * The pets on sale are retired afterwards, so what follows (the export, the list) sees the file's
 * entries alone.
 */
export async function importWhileServing(databaseUrl: string, file: string): Promise<ServedImport> {
  const { result: imported, patches } = await whileServing(databaseUrl, () => runCli(databaseUrl, ['pets', 'import', file]));
  await retirePetsOnSale(databaseUrl);
  return { imported, patches };
}

/**
 * `work` while the service serves `databaseUrl` (seeded with ON_SALE pets on sale; pinned to the
 * server core) and PATCHes of those pets go to it at IMPORT_PATCHES' pace, from `work`'s start to
 * its end: an import beside a shop's sales, or a bare load beside the same sales to a database of
 * their own (on PostgreSQL every database of the server shares one WAL, and its commits). The
 * PATCHes come from a process of their own on the load core, so a `work` that holds the bench's
 * event loop (a bare load on SQLite is synchronous) does not hold them; a fifth of a second of them
 * goes first, so the pacer is up when `work` starts.
 */
export async function whileServing<T>(databaseUrl: string, work: () => Promise<T>): Promise<{ result: T; patches: LoadResult }> {
  const key = await seedDatabaseWith(databaseUrl, benchItems(ON_SALE));
  const server = await startServer('service', { databaseUrl, key });
  const pacer = new ChildRunner<Omit<LoadJob, 'id'>, LoadResult>('bench/load-runner.ts', 'paced PATCHes', true);
  try {
    const spec: LoadSpec = {
      baseUrl: server.baseUrl,
      method: 'PATCH',
      authorization: `Bearer ${key}`,
      petCount: ON_SALE,
      connections: IMPORT_PATCHES.connections,
      warmupSeconds: 0,
      durationSeconds: UNTIL_STOPPED_SECONDS,
      rate: IMPORT_PATCHES.rate,
    };
    await pacer.run({ spec: { ...spec, durationSeconds: 0.2 } });
    const stop = new AbortController();
    const patches = pacer.run({ spec }, stop.signal);
    const result = await work().finally(() => stop.abort());
    return { result, patches: await patches };
  } finally {
    await pacer.close();
    await server.stop();
  }
}

async function retirePetsOnSale(databaseUrl: string): Promise<void> {
  const store = await openStore(databaseUrl);
  try {
    const at = new Date();
    for (let petId = 1n; petId <= ON_SALE; petId++) await store.changes.retireEntry(petId, { force: true, at });
  } finally {
    await store.close();
  }
}
