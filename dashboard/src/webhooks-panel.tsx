import type { WebhookList } from '@petstore/inventory-client';
import { useState } from 'preact/hooks';
import { describeError } from './messages.js';
import type { Session } from './session.js';
import { webhookRow } from './webhooks-model.js';

interface Props {
  session: Session;
  /** A failure of the request: a refused key signs out. */
  onError: (error: unknown) => void;
}

/**
 * The webhook endpoints' state, read-only (the CLI manages them), folded away until opened: it is
 * read each time it opens, and only for a key with webhooks:manage; another key sees a note.
 */
export function WebhooksPanel({ session, onError }: Props) {
  const [list, setList] = useState<WebhookList | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);

  const load = async () => {
    setLoading(true);
    try {
      setList(await session.client.listWebhooks());
      setProblem(null);
    } catch (error) {
      onError(error);
      setProblem(describeError(error));
    } finally {
      setLoading(false);
    }
  };

  return (
    <details
      class="webhooks"
      onToggle={(event) => {
        if (event.currentTarget.open && session.canManageWebhooks) void load();
      }}
    >
      <summary>Webhooks</summary>
      {!session.canManageWebhooks ? (
        <p class="note">A key with the scope webhooks:manage shows the webhook endpoints here.</p>
      ) : (
        <>
          {problem !== null && <p class="note">The webhook endpoints could not be loaded: {problem}</p>}
          {list !== null && list.items.length === 0 && <p>No webhook endpoints. The operator adds them with the CLI: webhooks add --url URL.</p>}
          {list !== null && list.items.length > 0 && (
            <table aria-label="Webhook endpoints">
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">State</th>
                  <th scope="col">In flight</th>
                  <th scope="col">Delivered up to</th>
                  <th scope="col">Backlog</th>
                  <th scope="col">Last failure</th>
                </tr>
              </thead>
              <tbody>
                {list.items.map(webhookRow).map((row) => (
                  <tr key={row.id} data-endpoint-id={row.id}>
                    <td title={row.url}>{row.url}</td>
                    <td>{row.state}</td>
                    <td class="number">{row.inFlight}</td>
                    <td class="number">{row.delivered}</td>
                    <td class="number">{row.backlog}</td>
                    <td>
                      {row.lastFailure}
                      {row.lastFailureAt !== null && (
                        <>
                          {' '}
                          (<time dateTime={row.lastFailureAt}>{new Date(row.lastFailureAt).toLocaleString()}</time>)
                        </>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {loading && <p role="status">Loading the webhook endpoints…</p>}
        </>
      )}
    </details>
  );
}
