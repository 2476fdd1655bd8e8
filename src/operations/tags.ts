import type { Tag } from './operation.js';

/** The document's tags, named by the operations; the document lists them in the order operations first name them. */

export const INVENTORY_TAG = { name: 'inventory', description: 'Stock levels' } as const satisfies Tag;

export const KEYS_TAG = { name: 'keys', description: 'The API key making the call' } as const satisfies Tag;

export const WEBHOOKS_TAG = { name: 'webhooks', description: 'The webhook endpoints events are delivered to (read-only: the CLI manages them)' } as const satisfies Tag;

export const META_TAG = { name: 'meta', description: 'About the service' } as const satisfies Tag;
