import { randomBytes } from 'node:crypto';
import type { ChangeOrigin } from '../../src/domain/inventory.js';
import type { NewReservation, ReservationItem, ReservationResult } from '../../src/domain/reservation.js';

/** The origin of a test key's request: its key, request and time; `extra` overrides any of it. */
export function testOrigin(extra: Partial<ChangeOrigin> = {}): ChangeOrigin {
  return { source: 'api', keyId: 'key_test', keyName: 'test key', requestId: 'req-test', at: new Date(), ...extra };
}

/** A reservation of `items` ([petId, quantity] pairs) as a test key would ask for it. */
export function newReservation(items: readonly (readonly [bigint, number])[], options: { ttlSeconds?: number; reference?: string | null; origin?: Partial<ChangeOrigin> } = {}): NewReservation {
  return {
    id: `res_${randomBytes(12).toString('hex')}`,
    items: items.map(([petId, quantity]): ReservationItem => ({ petId, quantity })),
    ttlSeconds: options.ttlSeconds ?? 900,
    reference: options.reference ?? null,
    origin: testOrigin(options.origin),
  };
}

/** The reservation a result made, or a failure naming what came instead. */
export function created(result: ReservationResult) {
  if (result.kind !== 'created') throw new Error(`expected a reservation, got ${JSON.stringify(result, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}`);
  return result.reservation;
}
