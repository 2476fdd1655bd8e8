import { itemJson } from '../domain/inventory.js';
import type { InventoryItem } from '../schemas/inventory.js';

/** Entries per segment when the list is built; a segment that grows to twice this is split. */
export const SEGMENT_SIZE = 512;

interface Segment {
  /** Sorted by petId; segment i holds the ids from its first up to the next segment's first. */
  items: InventoryItem[];
  /** The items as JSON, comma-separated without brackets; undefined when it must be rebuilt. */
  json: Buffer | undefined;
}

/**
 * The JSON text of GET /v1/inventory, kept in segments of consecutive petIds so that a change
 * re-serialises only the segments it touches: after one PATCH on 100,000 entries, one segment
 * of ~512 entries is written again and the rest of the body is copied as bytes.
 */
export class ListBody {
  #segments: Segment[] = [];
  /** How many segments the last render() serialised (the rest were reused as bytes). */
  serialisedSegments = 0;

  /** How many entries the body holds (walks the segments: for a scrape, not per request). */
  get size(): number {
    let size = 0;
    for (const segment of this.#segments) size += segment.items.length;
    return size;
  }

  /** Replaces everything with `items` (sorted by petId ascending, as the store lists them). */
  reset(items: readonly InventoryItem[]): void {
    this.#segments = [];
    for (let i = 0; i < items.length; i += SEGMENT_SIZE) {
      this.#segments.push({ items: items.slice(i, i + SEGMENT_SIZE), json: undefined });
    }
  }

  /** Puts in each item, replacing the entry with its petId or inserting it in order. */
  apply(items: readonly InventoryItem[]): void {
    for (const item of items) {
      if (this.#segments.length === 0) this.#segments.push({ items: [], json: undefined });
      const index = this.#segmentFor(item.petId);
      const segment = this.#segments[index]!;
      const at = lowerBound(segment.items, item.petId);
      if (segment.items[at]?.petId === item.petId) segment.items[at] = item;
      else segment.items.splice(at, 0, item);
      segment.json = undefined;
      if (segment.items.length >= 2 * SEGMENT_SIZE) {
        const half = segment.items.splice(SEGMENT_SIZE);
        this.#segments.splice(index + 1, 0, { items: half, json: undefined });
      }
    }
  }

  /** Takes out the entries with these petIds (ids it does not hold are ignored); a segment left empty goes. */
  remove(petIds: readonly bigint[]): void {
    for (const petId of petIds) {
      if (this.#segments.length === 0) return;
      const index = this.#segmentFor(petId);
      const segment = this.#segments[index]!;
      const at = lowerBound(segment.items, petId);
      if (segment.items[at]?.petId !== petId) continue;
      segment.items.splice(at, 1);
      segment.json = undefined;
      if (segment.items.length === 0) this.#segments.splice(index, 1);
    }
  }

  /** The whole array as JSON bytes; only segments changed since the last call are serialised. */
  render(): Buffer {
    const parts: Buffer[] = [OPEN];
    this.serialisedSegments = 0;
    for (const segment of this.#segments) {
      if (segment.items.length === 0) continue;
      if (!segment.json) {
        segment.json = Buffer.from(segment.items.map(itemJson).join(','));
        this.serialisedSegments++;
      }
      if (parts.length > 1) parts.push(COMMA);
      parts.push(segment.json);
    }
    parts.push(CLOSE);
    return Buffer.concat(parts);
  }

  /** The last segment whose first petId is at most `petId` (the first segment for smaller ids). */
  #segmentFor(petId: bigint): number {
    let lo = 0;
    let hi = this.#segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      const first = this.#segments[mid]!.items[0];
      if (first !== undefined && first.petId <= petId) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/** The index of the first item whose petId is not below `petId`. */
function lowerBound(items: readonly InventoryItem[], petId: bigint): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (items[mid]!.petId < petId) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
