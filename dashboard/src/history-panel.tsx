import type { HistoryItem, InventoryClient } from '@petstore/inventory-client';
import { useEffect, useRef, useState } from 'preact/hooks';
import { formatCount } from './messages.js';

/** Changes per page: enough to fill the panel, few enough to come at once. */
const PAGE_SIZE = 20;

interface Props {
  client: InventoryClient;
  petId: bigint;
  onClose: () => void;
  onError: (error: unknown) => void;
}

/** The changes of one entry, newest first, a page at a time. */
export function HistoryPanel({ client, petId, onClose, onError }: Props) {
  const [items, setItems] = useState<HistoryItem[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const heading = useRef<HTMLHeadingElement>(null);
  const id = petId.toString();

  const load = async (from: string | null) => {
    setLoading(true);
    try {
      const page = await client.listHistory(petId, { limit: PAGE_SIZE, ...(from ? { cursor: from } : {}) });
      setItems((shown) => (from ? [...shown, ...page.items] : page.items));
      setCursor(page.nextCursor);
    } catch (error) {
      onError(error);
    } finally {
      setLoading(false);
    }
  };

  useEffect(() => {
    void load(null);
    heading.current?.focus();
    // Once: the panel is keyed by the pet, so another pet makes a new panel.
  }, []);

  return (
    <section
      class="history"
      aria-labelledby="history-heading"
      onKeyDown={(event) => {
        if (event.key === 'Escape') onClose();
      }}
    >
      <header>
        <h2 id="history-heading" tabIndex={-1} ref={heading}>
          History of pet {id}
        </h2>
        <button type="button" class="secondary" onClick={onClose}>
          Close history
        </button>
      </header>
      {items.length === 0 && !loading ? (
        <p>No changes recorded.</p>
      ) : (
        <table aria-label={`Changes of pet ${id}, newest first`}>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">From</th>
              <th scope="col">To</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <tr key={`${item.at} ${item.requestId}`}>
                <td>
                  <time dateTime={item.at}>{new Date(item.at).toLocaleString()}</time>
                </td>
                <td>{item.keyName}</td>
                <td class="number">{formatCount(item.previousQuantity)}</td>
                <td class="number">{formatCount(item.quantity)}</td>
                <td>{item.reason ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {loading && <p role="status">Loading…</p>}
      {cursor !== null && !loading && (
        <button type="button" class="secondary" onClick={() => void load(cursor)}>
          Older changes
        </button>
      )}
    </section>
  );
}
