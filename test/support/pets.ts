import type { InventoryItem } from '../../src/schemas/inventory.js';

/** The largest petId, as a path writes it. */
export const INT64_MAX_ID = '9223372036854775807';

/** One pet of each status, added out of order (a list answers them by petId). */
export const PETS_OF_EACH_STATUS: readonly InventoryItem[] = [
  { petId: 3n, quantity: 0, status: 'sold' },
  { petId: 1n, quantity: 12, status: 'available' },
  { petId: 2n, quantity: 4, status: 'pending' },
];

/** Pet 1, and the pet with the largest petId, whose digits a double would lose. */
export const PET_1_AND_INT64_MAX: readonly InventoryItem[] = [
  { petId: 1n, quantity: 10, status: 'available' },
  { petId: BigInt(INT64_MAX_ID), quantity: 0, status: 'pending' },
];
