import { RESERVATION_STATUSES } from '../schemas/values.js';

export { RESERVATION_STATUSES };
/** Where a reservation stands (decisions 12). */
export type ReservationStatus = (typeof RESERVATION_STATUSES)[number];

/** One pet a reservation holds, and how many of it. */
export interface ReservationItem {
  petId: bigint;
  quantity: number;
}
