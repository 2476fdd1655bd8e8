import { loadConfig, type Config } from '../config.js';
import { openStore } from '../store/open.js';
import type { InventoryStore } from '../store/store.js';
import type { CliIO } from './io.js';

/**
 * Opens the store that the command's environment names (DATABASE_URL, as the server reads it),
 * runs `fn` with it and the config, and closes the store whatever happens.
 */
export async function withStore<T>(io: Pick<CliIO, 'env'>, fn: (store: InventoryStore, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig(io.env);
  const store = await openStore(config.databaseUrl);
  try {
    return await fn(store, config);
  } finally {
    await store.close();
  }
}
