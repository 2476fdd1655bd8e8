import { existsSync } from 'node:fs';
import { DEFAULT_DATABASE_URL, loadConfig, type Config } from '../config.js';
import { openStore, parseDatabaseUrl } from '../store/open.js';
import type { PortName, Store } from '../store/store.js';
import { CliError, type CliIO } from './io.js';

/** Where a command writes; stderr, when given, hears of a store file the command created. */
type StoreIO = Pick<CliIO, 'env'> & Partial<Pick<CliIO, 'stderr'>>;

/** What a command does with the ports it named (those alone) and the config. */
type WithPorts<N extends PortName, T> = (ports: Pick<Store, N>, config: Config) => Promise<T>;

/**
 * Opens the store that the command's environment names (DATABASE_URL, as the server reads it),
 * runs `fn` with the ports the command names (and only those) and the config, and closes the
 * store whatever happens. For commands that write: a SQLite file that does not exist yet is
 * created, and stderr says where.
 */
export async function withStore<N extends PortName, T>(io: StoreIO, ports: readonly N[], fn: WithPorts<N, T>): Promise<T> {
  return use(io, ports, fn, 'create');
}

/**
 * withStore for commands that only read (or change what must already be there): a SQLite file
 * that does not exist is not created, and the command fails naming the path it looked at.
 */
export async function withExistingStore<N extends PortName, T>(io: StoreIO, ports: readonly N[], fn: WithPorts<N, T>): Promise<T> {
  return use(io, ports, fn, 'existing');
}

/** Creates the store databaseUrl names if it is a SQLite file that does not exist yet, saying where on stderr. */
export async function createStoreIfMissing(databaseUrl: string, io: Pick<CliIO, 'stderr'>): Promise<void> {
  if (missingStoreFile(databaseUrl) !== undefined) await (await openCliStore(databaseUrl, io, 'create')).close();
}

async function use<N extends PortName, T>(io: StoreIO, ports: readonly N[], fn: WithPorts<N, T>, mode: 'create' | 'existing'): Promise<T> {
  const config = loadConfig(io.env);
  const store = await openCliStore(config.databaseUrl, io, mode, config.databaseDirectUrl);
  try {
    // The named ports alone, so a command cannot reach for one it did not name.
    return await fn(Object.fromEntries(ports.map((name) => [name, store[name]])) as Pick<Store, N>, config);
  } finally {
    await store.close();
  }
}

async function openCliStore(databaseUrl: string, io: Partial<Pick<CliIO, 'stderr'>>, mode: 'create' | 'existing', directUrl?: string): Promise<Store> {
  const missing = missingStoreFile(databaseUrl);
  if (missing !== undefined && mode === 'existing') throw new CliError(noStoreMessage(missing, databaseUrl));
  const store = await openStore(databaseUrl, { directUrl });
  if (missing !== undefined) io.stderr?.(`Created a new store at ${missing}\n`);
  return store;
}

/** The SQLite file's absolute path when it does not exist; undefined when it does, for :memory: and for PostgreSQL. */
function missingStoreFile(databaseUrl: string): string | undefined {
  const target = parseDatabaseUrl(databaseUrl);
  if (target.backend !== 'sqlite' || target.filename === ':memory:') return undefined;
  return existsSync(target.filename) ? undefined : target.filename;
}

function noStoreMessage(path: string, databaseUrl: string): string {
  // The relative default is what surprises: it names another file in every directory.
  const source = databaseUrl === DEFAULT_DATABASE_URL ? `DATABASE_URL is the default, ${databaseUrl}, relative to the working directory` : `DATABASE_URL=${databaseUrl}`;
  return `no store at ${path} (${source}): set DATABASE_URL=sqlite:/path/to/inventory.db to use another; "serve", "keys create", "pets add", "pets import" or "webhooks add" makes a new one`;
}
