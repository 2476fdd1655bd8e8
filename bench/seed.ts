import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { issueApiKey } from '../src/auth/issue-key.js';
import { EXPORT_WRITERS } from '../src/cli/export-format.js';
import type { InventoryItem } from '../src/schemas/inventory.js';
import type { SCOPES } from '../src/schemas/values.js';
import { PET_STATUSES } from '../src/schemas/values.js';
import { openStore } from '../src/store/open.js';

/** Pets from+1..size with varied but reproducible quantities and statuses, so every run serves the same bytes. */
export function benchItems(size: number, from = 0): InventoryItem[] {
  return Array.from({ length: size - from }, (_, k) => {
    const i = from + k;
    return { petId: BigInt(i + 1), quantity: (i * 7919) % 1000, status: PET_STATUSES[i % PET_STATUSES.length]! };
  });
}

/**
 * Fills an empty database through the service's own store (so its schema and migrations are the
 * real ones) and returns a fresh inventory:write key; the store is closed before any server starts.
 */
export async function seedDatabase(databaseUrl: string, size: number): Promise<string> {
  return seedDatabaseWith(databaseUrl, benchItems(size));
}

/** seedDatabase with these entries, and a key with these scopes (default inventory:write). */
export async function seedDatabaseWith(databaseUrl: string, items: InventoryItem[], scopes: (typeof SCOPES)[number][] = ['inventory:write']): Promise<string> {
  const store = await openStore(databaseUrl);
  try {
    await store.changes.addItems(items);
    const { key } = await issueApiKey(store.keys, { name: 'bench', environment: 'production', scopes, expiresAt: null });
    return key;
  } finally {
    await store.close();
  }
}

/** Why the service's own store cannot open this database (e.g. a backend it does not support yet), or undefined. */
export async function storeProblem(databaseUrl: string): Promise<string | undefined> {
  try {
    await (await openStore(databaseUrl)).close();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * benchItems(from + size, from), pets from+1..from+size, as `pets export` writes them in CSV, a page at
 * a time: the file the catalogue scenario imports.
 */
export async function writeBenchCatalogue(path: string, size: number, from = 0): Promise<void> {
  const writer = EXPORT_WRITERS.csv;
  const out = createWriteStream(path);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  await write(writer.start);
  for (let first = from; first < from + size; first += 10_000) {
    const page = benchItems(Math.min(from + size, first + 10_000), first);
    await write(writer.page(page, first === from));
  }
  await write(writer.end(size === 0));
  out.end();
  await once(out, 'finish');
}
