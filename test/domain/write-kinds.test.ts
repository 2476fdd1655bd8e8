import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EVENT_TYPES } from '../../src/domain/event.js';
import { RESERVATION_EVENT_TYPES } from '../../src/domain/reservation-events.js';
import { eventOf, WRITE_KINDS, type WriteFacts } from '../../src/domain/write-kinds.js';

const AT = new Date('2026-11-26T10:00:00.000Z');
const FACTS: WriteFacts = { petId: 9007199254740993n, status: 'pending', before: 5, after: 8, version: 4, at: AT, reason: 'sold' };
const ORIGIN = { source: 'api', keyId: 'key_till', requestId: 'req-1' } as const;
const SAME = { occurredAt: AT, petId: FACTS.petId, status: FACTS.status, version: 4 } as const;
const BY_CLI = { source: 'cli', keyId: null, requestId: null } as const;

test("every entry's event type is appended by some kind of write, every kind appends one of them, and every status a reservation reaches appends its own", () => {
  assert.deepEqual(new Set(Object.values(WRITE_KINDS).map((kind) => kind.event)), new Set(EVENT_TYPES.filter((t) => t.startsWith('inventory.'))));
  assert.deepEqual(new Set(Object.values(RESERVATION_EVENT_TYPES)), new Set(EVENT_TYPES.filter((t) => t.startsWith('reservation.'))));
});

test("eventOf: each kind's event, as decisions 5.9 has it", () => {
  assert.deepEqual(eventOf('created', { ...FACTS, before: null }), {
    type: 'inventory.created',
    ...SAME,
    previousQuantity: null,
    quantity: 8,
    reason: null,
    ...BY_CLI,
  });
  assert.deepEqual(eventOf('created', FACTS), eventOf('created', { ...FACTS, before: null }), 'a revival has no previous quantity either');
  assert.deepEqual(eventOf('updated', { ...FACTS, origin: ORIGIN }), {
    type: 'inventory.updated',
    ...SAME,
    previousQuantity: 5,
    quantity: 8,
    reason: 'sold',
    ...ORIGIN,
  });
  assert.deepEqual(eventOf('imported', FACTS), { type: 'inventory.updated', ...SAME, previousQuantity: 5, quantity: 8, reason: 'correction', ...BY_CLI });
  assert.deepEqual(eventOf('deleted', { ...FACTS, after: 5 }), { type: 'inventory.deleted', ...SAME, previousQuantity: 5, quantity: null, reason: null, ...BY_CLI });
});

test("eventOf: a change of the CLI (pets adjust) has source cli and no key nor request id, whatever its history row names", () => {
  const event = eventOf('updated', { ...FACTS, origin: { source: 'cli', keyId: 'cli:adjust', requestId: 'adjust-1' } });
  assert.deepEqual(event, { type: 'inventory.updated', ...SAME, previousQuantity: 5, quantity: 8, reason: 'sold', ...BY_CLI });
});

test('eventOf: a kind whose event takes the change origin or reason refuses facts without them', () => {
  assert.throws(() => eventOf('updated', { ...FACTS, origin: undefined }), /needs its origin/);
  assert.throws(() => eventOf('updated', { ...FACTS, reason: undefined, origin: ORIGIN }), /needs its reason/);
});
