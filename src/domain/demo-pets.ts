import type { InventoryItem } from '../schemas/inventory.js';

/** A few entries for trying the API (`serve --demo` on an empty store). */
export const DEMO_PETS: readonly InventoryItem[] = [
  { petId: 1n, quantity: 12, status: 'available' },
  { petId: 2n, quantity: 3, status: 'available' },
  { petId: 3n, quantity: 0, status: 'sold' },
  { petId: 4n, quantity: 1, status: 'pending' },
  { petId: 5n, quantity: 7, status: 'available' },
];
