import type { Statement } from './connection.js';

/** The payload of the NOTIFY that says the endpoints version moved (on the event log's channel, events.ts). */
export const ENDPOINTS_CHANGED = 'endpoints';

/**
 * The bump of the endpoints version (webhook_state) as a data-modifying CTE named `bumped`, with its
 * NOTIFY on `channel` (a parameter): only when `when` (SQL) holds. Every write that changes what a
 * dispatcher acts on carries it (changingEndpoints, and a worker's flush that disables), so the
 * version moves in the write's own statement, and no such write can commit without it.
 */
export function endpointsBump(when: string, channel: string): string {
  return `bumped AS (
             UPDATE webhook_state SET endpoints_version = endpoints_version + 1
             WHERE id = 1 AND ${when}
             RETURNING pg_notify(${channel}, '${ENDPOINTS_CHANGED}'))`;
}

/**
 * `change` (an INSERT, UPDATE or DELETE of webhook_endpoints with a RETURNING clause) as one
 * statement that also bumps the endpoints version when it changed a row; its rows are `change`'s
 * RETURNING rows. `channel`: the parameter holding the NOTIFY channel.
 */
export function changingEndpoints(name: string, change: string, channel: string): Statement {
  return {
    name,
    // The bump is joined in so that it runs (and notifies) whatever the planner makes of the rest.
    text: `WITH changed AS (${change}),
           ${endpointsBump('EXISTS (SELECT 1 FROM changed)', channel)}
           SELECT changed.* FROM changed, (SELECT count(*) FROM bumped) b`,
  };
}

/** The endpoints version now. */
export const READ_ENDPOINTS_VERSION: Statement = {
  name: 'webhook-endpoints-version',
  text: 'SELECT endpoints_version AS version FROM webhook_state WHERE id = 1',
};
