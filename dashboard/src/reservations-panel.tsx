import type { Reservation } from '@petstore/inventory-client';
import { useEffect, useRef, useState } from 'preact/hooks';
import { describeError, formatCount } from './messages.js';
import type { Session } from './session.js';

interface Props {
  session: Session;
  /** Moves each time the table's list is read and found changed (use-inventory.ts). */
  listChanges: number;
  /** A failure of a request: a refused key signs out. */
  onError: (error: unknown) => void;
}

/** Why the list is read: someone opened the panel or pressed Refresh; a release ended; or the inventory changed, a read nobody asked for, so it shows no Loading line. */
type Reason = 'asked' | 'released' | 'changed';

/** The most active reservations the panel lists: the newest page, as the API pages them. */
const LISTED = 100;

/**
 * The active reservations (stock held for checkouts), folded away until opened: read each time it
 * opens or is refreshed, and while open each time the table's list changes, and only for a key
 * that may release them (reservations:write or inventory:write); Release gives one's stock back at
 * once. The table's held and available follow by the reservation's event.
 */
export function ReservationsPanel({ session, listChanges, onError }: Props) {
  const [list, setList] = useState<{ items: Reservation[]; more: boolean } | null>(null);
  const [problem, setProblem] = useState<{ text: string; refusal: boolean } | null>(null);
  const [loading, setLoading] = useState(false);
  const [releasing, setReleasing] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const open = useRef(false);
  // Reads overlap once changes elsewhere start them: only the latest may show, or an older answer could bring back a reservation ended since.
  const latest = useRef(0);

  const load = async (reason: Reason) => {
    const read = ++latest.current;
    if (reason !== 'changed') setLoading(true);
    try {
      const page = await session.client.listReservations({ status: 'active', limit: LISTED });
      if (read !== latest.current) return;
      setList({ items: page.items, more: page.nextCursor !== null });
      // A refused release's reason outlives the lists read after it, until someone asks for the list again.
      setProblem((shown) => (reason !== 'asked' && shown?.refusal ? shown : null));
    } catch (error) {
      onError(error);
      if (read === latest.current) setProblem({ text: describeError(error), refusal: false });
    } finally {
      if (read === latest.current) setLoading(false);
    }
  };

  // What reservations hold is in the table's list, so a reservation made, ended or expired anywhere changes it:
  // by its event while the stream is live, or by the poll while it is not.
  useEffect(() => {
    if (open.current && session.canReserve) void load('changed');
  }, [listChanges]);

  const release = async (id: string) => {
    setReleasing(id);
    try {
      const released = await session.client.releaseReservation(id);
      setStatus(`Released ${id}: ${released.items.map((i) => `${formatCount(i.quantity)} of pet ${i.petId}`).join(', ')} available again.`);
      setProblem(null);
    } catch (error) {
      onError(error);
      // Committed or expired meanwhile: the service's message names its status.
      setStatus(null);
      setProblem({ text: `${id} could not be released: ${describeError(error)}`, refusal: true });
    } finally {
      setReleasing(null);
    }
    await load('released');
  };

  return (
    <details
      class="reservations"
      onToggle={(event) => {
        open.current = event.currentTarget.open;
        if (open.current && session.canReserve) void load('asked');
      }}
    >
      <summary>Reservations</summary>
      {!session.canReserve ? (
        <p class="note">A key with the scope reservations:write or inventory:write shows the active reservations here.</p>
      ) : (
        <>
          <div class="panel-actions">
            <button type="button" class="secondary" onClick={() => void load('asked')}>
              Refresh
            </button>
          </div>
          <div role="status" class="status-message">
            {status}
          </div>
          {problem !== null && (
            <p class="note" role="alert">
              {problem.text}
            </p>
          )}
          {list !== null && list.items.length === 0 && <p>No active reservations: nothing is held for a checkout.</p>}
          {list !== null && list.items.length > 0 && (
            <table aria-label="Active reservations">
              <thead>
                <tr>
                  <th scope="col">Reservation</th>
                  <th scope="col">Holds</th>
                  <th scope="col">Reference</th>
                  <th scope="col">Expires</th>
                  <th scope="col">Action</th>
                </tr>
              </thead>
              <tbody>
                {list.items.map((r) => (
                  <tr key={r.id} data-reservation-id={r.id}>
                    <td>{r.id}</td>
                    <td>{r.items.map((i) => `${formatCount(i.quantity)} of pet ${i.petId}`).join(', ')}</td>
                    <td>{r.reference ?? '—'}</td>
                    <td>
                      <time dateTime={r.expiresAt}>{new Date(r.expiresAt).toLocaleString()}</time>
                    </td>
                    <td>
                      <button type="button" aria-label={`Release ${r.id}`} aria-busy={releasing === r.id} onClick={() => releasing === null && void release(r.id)}>
                        Release
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {list?.more && <p class="note">The newest {LISTED} are shown; the CLI lists them all: reservations list --status active.</p>}
          {loading && <p role="status">Loading the reservations…</p>}
        </>
      )}
    </details>
  );
}
