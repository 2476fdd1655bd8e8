import type { PetStatus } from '@petstore/inventory-client';
import { STATUSES, type RowFilter } from './inventory-model.js';
import { describeError, formatCount } from './messages.js';
import { startMeasure } from './timing.js';
import { REFRESH_INTERVAL_MS } from './use-inventory.js';

interface Props {
  filter: RowFilter;
  onFilter: (filter: RowFilter) => void;
  shown: number;
  total: number;
  refreshedAt: Date | null;
  refreshError: unknown;
  /** The stream of changes is open: they show as they happen. */
  live: boolean;
}

export function Toolbar({ filter, onFilter, shown, total, refreshedAt, refreshError, live }: Props) {
  const update = (next: RowFilter) => {
    startMeasure('dashboard:filter');
    onFilter(next);
  };
  return (
    <div class="toolbar">
      <div class="field">
        <label for="status-filter">Status</label>
        <select id="status-filter" value={filter.status ?? ''} onChange={(event) => update({ ...filter, status: (event.currentTarget.value || null) as PetStatus | null })}>
          <option value="">All statuses</option>
          {STATUSES.map((status) => (
            <option key={status} value={status}>
              {status}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="search">Search pet ID</label>
        <input id="search" type="search" inputmode="numeric" autocomplete="off" value={filter.search} onInput={(event) => update({ ...filter, search: event.currentTarget.value })} />
      </div>
      <p class="shown">
        Showing {formatCount(shown)} of {formatCount(total)}
      </p>
      <p class="freshness">
        {/* Said when it changes (rarely), unlike the time beside it. */}
        <span class={live ? 'live-state live' : 'live-state'} aria-live="polite">
          {live ? 'Live' : 'Not live'}
        </span>
        {live ? ' · changes show as they happen' : ` · checking every ${REFRESH_INTERVAL_MS / 1000} s · `}
        {live ? null : refreshedAt ? `Last refreshed ${refreshedAt.toLocaleTimeString()}` : 'Not refreshed yet'}
        {refreshError ? <span class="stale"> · the last check failed: {describeError(refreshError)}</span> : null}
      </p>
    </div>
  );
}
