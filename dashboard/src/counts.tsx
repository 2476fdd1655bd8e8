import type { StatusCounts } from './inventory-model.js';
import { formatCount } from './messages.js';

export function Counts({ counts }: { counts: StatusCounts }) {
  const entries: [string, number, string][] = [
    ['Available', counts.available, 'available'],
    ['Pending', counts.pending, 'pending'],
    ['Sold', counts.sold, 'sold'],
    ['Total', counts.total, 'total'],
    ['Out of stock', counts.outOfStock, 'out-of-stock'],
  ];
  return (
    <dl class="counts" aria-label="Stock counts">
      {entries.map(([label, n, kind]) => (
        <div key={kind} class={`count count-${kind}`}>
          <dt>{label}</dt>
          <dd>{formatCount(n)}</dd>
        </div>
      ))}
    </dl>
  );
}
