import type { Config } from './config.js';
import { generateApiKey } from './domain/api-key.js';
import type { InventoryItem } from './schemas/inventory.js';
import { DuplicatePetError, type ApiKeys, type Changes, type Entries } from './store/store.js';

/** A few entries for trying the API (`serve --demo` on an empty store). */
export const DEMO_PETS: readonly InventoryItem[] = [
  { petId: 1n, quantity: 12, status: 'available' },
  { petId: 2n, quantity: 3, status: 'available' },
  { petId: 3n, quantity: 0, status: 'sold' },
  { petId: 4n, quantity: 1, status: 'pending' },
  { petId: 5n, quantity: 7, status: 'available' },
];

/**
 * What a server does to a store before it serves: adds DEMO_PETS when asked and the store has no
 * entries, and on a store with no API keys creates the first-run key, which it returns.
 */
export async function prepareStore(
  store: { entries: Pick<Entries, 'listInventory'>; changes: Pick<Changes, 'addItems'>; keys: Pick<ApiKeys, 'insertFirstApiKey'> },
  config: Config,
  demo: boolean,
): Promise<string | undefined> {
  if (demo && (await store.entries.listInventory()).length === 0) {
    try {
      await store.changes.addItems(DEMO_PETS);
    } catch (err) {
      // Another instance starting at the same moment added them first.
      if (!(err instanceof DuplicatePetError)) throw err;
    }
  }
  // Atomic: of several instances starting on an empty store, exactly one creates (and prints) the key.
  const issued = generateApiKey({ name: 'first-run', environment: config.environment, scopes: ['inventory:write'], expiresAt: null });
  return (await store.keys.insertFirstApiKey(issued.record)) ? issued.key : undefined;
}

/** Where the banner's curl lines point, and the pet its PATCH names (undefined: the store has none yet). */
export interface BannerTarget {
  host: string;
  port: number;
  firstPetId: bigint | undefined;
}

/** The first-run banner: the new key, shown once, with curl lines ready to paste, and where the dashboard and the API reference are. */
export function firstRunBanner(key: string, { host: listenHost, port, firstPetId }: BannerTarget): string {
  const host = ['0.0.0.0', '::', ''].includes(listenHost) ? 'localhost' : listenHost;
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const base = `${origin}/v1`;
  const petId = firstPetId ?? 1n;
  const lines = [
    '',
    'First run: created an API key with scope inventory:write.',
    'It is shown only this once; store it now:',
    '',
    `    ${key}`,
    '',
    'List the stock of every pet:',
    `    curl -s ${base}/inventory -H 'Authorization: Bearer ${key}'`,
    '',
    `Set the stock of pet ${petId}:`,
    `    curl -s -X PATCH ${base}/inventory/${petId} -H 'Authorization: Bearer ${key}' -H 'Content-Type: application/json' -d '{"quantity": 5}'`,
    '',
  ];
  if (firstPetId === undefined) {
    lines.push(
      'The store has no pets yet, so that PATCH answers 404 until you add one:',
      `    ./bin/petstore-inventory pets add --pet-id ${petId} --status available --quantity 3`,
      'or restart with a few demo pets: npm start -- --demo',
      '',
    );
  }
  lines.push(
    `The staff dashboard (sign in with the key): ${origin}/dashboard`,
    `The API reference: ${origin}/docs`,
    '',
    'More keys: ./bin/petstore-inventory keys create --name NAME --scope inventory:read',
    '',
  );
  return lines.join('\n');
}
