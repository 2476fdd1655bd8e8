import type { LoadGenerator } from './load.js';
import type { BenchOptions } from './options.js';
import type { Backend } from './databases.js';
import type { Row, Section } from './report.js';
import { paceRows } from './webhook-pace.js';
import { deliveryRateRows, latencyRow, throughputRows } from './webhooks.js';

/**
 * Webhooks on one backend: deliveries per second to one local endpoint that answers at once (a
 * backlog built while the endpoint's first delivery is held, then released), the time from a
 * PATCH's 200 to its delivery, and PATCH throughput with ten endpoints registered against none,
 * two servers side by side.
 */
export async function webhooksSection(backend: Backend, title: string, options: BenchOptions, load: LoadGenerator): Promise<Section> {
  const rows: Row[] = [];
  const notes: string[] = [];
  rows.push(...(await deliveryRateRows(backend, options, load, notes)));
  rows.push(await latencyRow(backend, options.smoke ? 20 : options.quick ? 200 : 500, notes));
  rows.push(...(await throughputRows(backend, options, load, notes)));
  rows.push(...(await paceRows(backend, options, notes)));
  return { title, rows, notes };
}
