import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openSqliteConnection } from '../../../src/store/sqlite/connection.js';
import { migrate } from '../../../src/store/sqlite/migrations.js';
import type { ReservationWrite } from '../../../src/domain/reservation.js';
import { reservationWrites } from '../../../src/store/sqlite/reservation-writes.js';
import { newReservation, testOrigin } from '../../support/reservations.js';

/** A connection on a fresh in-memory store with pet 1 (5 in stock). */
function stocked(t: { after: (fn: () => void) => void }) {
  const db = openSqliteConnection(':memory:');
  t.after(() => db.close());
  migrate(db);
  db.exec(`INSERT INTO inventory (pet_id, quantity, status, created_at, updated_at) VALUES (1, 5, 'available', 'x', 'x')`);
  const entry = () => db.prepare('SELECT quantity, reserved FROM inventory WHERE pet_id = 1').get() as { quantity: number; reserved: number };
  return { db, entry };
}

test('reservation writes of a group are judged in order on what the ones before left, in one transaction', (t) => {
  const { db, entry } = stocked(t);
  const first = newReservation([[1n, 3]]);
  const second = newReservation([[1n, 3]]);
  const third = newReservation([[1n, 2]]);
  const ops: ReservationWrite[] = [
    { reserve: first },
    { reserve: second },
    { end: { id: first.id, how: 'commit', origin: testOrigin() } },
    { reserve: third },
    { end: { id: 'res_000000000000000000000000', how: 'release', origin: testOrigin() } },
  ];
  const answers = reservationWrites(db).group(ops);
  assert.deepEqual(
    answers.map((a) => ('kind' in a ? a.kind : 'failed')),
    ['created', 'insufficient_stock', 'ended', 'created', 'not_found'],
    'the second finds 2 available after the first; the third fits once the first is sold',
  );
  assert.deepEqual({ ...entry() }, { quantity: 2, reserved: 2 });
  assert.equal(db.inTransaction, false, 'committed');
});

test('a write that throws fails its group: nothing of the group is written (the group commit then runs each alone)', (t) => {
  const { db, entry } = stocked(t);
  const kept = newReservation([[1n, 1]]);
  // A second item of quantity 0, which no request can send: its row breaks the table's CHECK after
  // the reservation's row and the first item's hold were written.
  const broken = newReservation([[1n, 1], [1n, 0]]);
  assert.throws(() => reservationWrites(db).group([{ reserve: kept }, { reserve: broken }]), /CHECK constraint failed/);
  assert.deepEqual({ ...entry() }, { quantity: 5, reserved: 0 }, 'rolled back');
  assert.equal(db.prepare('SELECT count(*) FROM reservations').pluck().get(), 0);
  assert.equal(db.inTransaction, false);
});
