import type { ReservationEnd } from '../domain/reservation.js';
import type { Reservations } from '../store/store.js';
import { jsonAnswer, type Answer } from './answer.js';
import type { ChangeRequest } from './change-request.js';
import { endRefusal, reservationIdOf, reservationJson } from './reservation-parts.js';

/** What each end is called in the refusal that says it cannot be done. */
const VERB = { commit: 'committed', release: 'released' } as const satisfies Record<ReservationEnd, string>;

/**
 * POST /v1/reservations/{id}/commit or /release (decisions 12.5): ended now, or already so (the
 * same 200 again, nothing written); 409 reservation_not_active in any other final status; 404.
 */
export async function answerEndReservation(
  reservations: Pick<Reservations, 'end'>,
  request: ChangeRequest & { params?: Readonly<Record<string, string>> | undefined },
  end: ReservationEnd,
): Promise<Answer> {
  const id = reservationIdOf(request.params);
  const { keyId, keyName } = request.principal;
  // No Idempotency-Key: an end is its own replay (the same end again answers the same 200).
  const outcome = await reservations.end(id, end, { source: 'api', keyId, keyName, requestId: request.requestId, at: new Date() });
  if (outcome.kind === 'ended' || outcome.kind === 'already') return jsonAnswer(200, reservationJson(outcome.reservation));
  throw endRefusal(outcome, id, VERB[end]);
}
