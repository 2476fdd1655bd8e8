import { importChange, type ImportPlan, type ImportRow, type ImportSource } from '../../src/domain/import.js';
import { isReservationEvent, type InventoryEvent, type StockEvent } from '../../src/domain/event.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import type { ChangeBatch, ChangeOrigin, ChangeResult, EntryChange, QuantityChange } from '../../src/domain/inventory.js';
import type { Store } from '../../src/store/store.js';

/** The entry's item without its version, or undefined: what most assertions compare. */
export async function itemOf(store: Pick<Store, 'entries'>, petId: bigint): Promise<InventoryItem | undefined> {
  return (await store.entries.getEntry(petId))?.item;
}

/** What a test may override in a change: anything but what it does to the count. */
type ChangeExtra = Partial<ChangeOrigin & Pick<EntryChange, 'condition' | 'reason'>>;

/** The origin of a test key's change or batch: its key, request and time. */
function origin(): ChangeOrigin {
  return { source: 'api', keyId: 'key_test', keyName: 'test key', requestId: 'req-test', at: new Date() };
}

/** A change setting the quantity, as a test key would make it; `extra` overrides any other field. */
export function change(petId: bigint, quantity: number, extra: ChangeExtra = {}): QuantityChange {
  return { petId, quantity, reason: null, ...origin(), ...extra };
}

/** A change moving the count by `delta` (an adjustment), as a test key would make it; `extra` overrides any other field. */
export function adjustment(petId: bigint, delta: number, extra: ChangeExtra = {}): QuantityChange {
  return { petId, delta, reason: null, ...origin(), ...extra };
}

/** A batch of a test key's changes (`{ quantity }` or `{ delta }` each, reason null unless given); `extra` overrides the origin. */
export function changeBatch(changes: readonly (Omit<EntryChange, 'reason'> & Partial<Pick<EntryChange, 'reason'>>)[], extra: Partial<ChangeOrigin> = {}): ChangeBatch {
  return { ...origin(), ...extra, changes: changes.map((c) => ({ reason: null, ...c }) as EntryChange) };
}

/** An unconditional change; the updated item, or undefined when petId has no entry. */
export async function setQuantity(store: Store, petId: bigint, quantity: number): Promise<InventoryItem | undefined> {
  const result: ChangeResult = await store.changes.applyChange(change(petId, quantity));
  if (result.kind === 'updated') return result.entry.item;
  if (result.kind === 'not_found') return undefined;
  throw new Error(`unexpected outcome ${result.kind}`);
}

/** An import source over rows given here, in batches of `batch`; `refused` is what the reader would have refused. */
export function importSource(items: readonly (InventoryItem | ImportRow)[], options: { batch?: number; refused?: number } = {}): ImportSource {
  const rows = items.map((r, i): ImportRow => ('item' in r ? r : { line: i + 2, item: r }));
  const batch = options.batch ?? 3;
  return {
    batches: (async function* () {
      for (let i = 0; i < rows.length; i += batch) yield rows.slice(i, i + batch);
    })(),
    refused: () => options.refused ?? 0,
  };
}

/** An import plan as the CLI makes one, at most 20 conflicts listed. */
export function importPlan(upsert = false, at = new Date()): ImportPlan {
  return { upsert, change: importChange(at), conflictsMax: 20 };
}

/** What a write leaves behind for these pets: the store version, the events head, each entry and its history. */
export async function writtenState(store: Store, petIds: readonly bigint[]): Promise<unknown> {
  return {
    version: await store.entries.readVersion(),
    eventsHead: await store.events.head(),
    entries: await Promise.all(petIds.map((petId) => store.entries.getEntry(petId))),
    history: await Promise.all(petIds.map((petId) => store.history.listHistory(petId, { limit: 1000 }))),
  };
}

/** Events of entries, as a test that makes no reservation reads them: a reservation's event among them fails it. */
export function stockEvents(events: readonly InventoryEvent[]): StockEvent[] {
  return events.map((e) => {
    if (isReservationEvent(e)) throw new Error(`a reservation's event where only entries' were expected: ${e.type}`);
    return e;
  });
}

/** Every event after seq `after`, oldest first (events of entries: stockEvents). */
export async function eventsAfter(store: Store, after: number): Promise<StockEvent[]> {
  const all: StockEvent[] = [];
  for (;;) {
    const page = await store.events.readEvents(after, 500);
    all.push(...stockEvents(page.items));
    if (page.items.length < 500) return all;
    after = page.items.at(-1)!.seq;
  }
}

/** Every event of the log after seq `after`, oldest first, reservations' among them. */
export async function logAfter(store: Store, after: number): Promise<InventoryEvent[]> {
  const all: InventoryEvent[] = [];
  for (;;) {
    const page = await store.events.readEvents(after, 500);
    all.push(...page.items);
    if (page.items.length < 500) return all;
    after = page.items.at(-1)!.seq;
  }
}
