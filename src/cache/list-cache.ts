import type { Entries } from '../store/store.js';
import { CONTENT_ENCODINGS, EncodedBody, type ContentEncoding } from './encoded-body.js';
import { FreshRead } from './fresh-read.js';
import { ListBody } from './list-body.js';

/** Brotli quality 5: most of its gain at a fraction of the time of 11, since this runs after every change. */
const LIST_COMPRESSION = { brotliQuality: 5, gzipLevel: 6 };

/** The list at one store version: its JSON bytes, ETags, and compressed forms made once when first asked for. */
export class ListSnapshot extends EncodedBody {
  /** Every ETag this version is served under, for If-None-Match; made once, read per request. */
  readonly etags: readonly string[];

  constructor(
    readonly version: number,
    body: Buffer,
    /** The event log's head read with this version: the list holds every event up to it and none after (X-Events-Head). */
    readonly eventsHead: number,
    /** The holds past their expiry this list leaves out, not yet marked (EntryChanges.lapsed); '' for none. */
    readonly lapsed = '',
  ) {
    super(body, LIST_COMPRESSION);
    this.etags = [this.etag(), ...CONTENT_ENCODINGS.map((e) => this.etag(e))];
  }

  /** A strong ETag per representation (RFC 9110 8.8.3): the coding is part of it, and so are lapsed holds, which change it at one version. */
  etag(encoding?: ContentEncoding): string {
    const version = this.lapsed === '' ? `${this.version}` : `${this.version}.${this.lapsed}`;
    return encoding ? `"inv-${version}-${encoding}"` : `"inv-${version}"`;
  }
}

/**
 * GET /v1/inventory served from memory and still exact. Each request waits for one query that
 * began after it arrived: the store version and the entries changed since the cached one
 * (usually none). That query is shared by the requests of one turn of the event loop and by
 * every request that arrived while the previous one was under way (FreshRead), so under load
 * one query, on PostgreSQL one round trip, serves many GETs. When something changed only the segments holding those entries
 * are re-rendered (retired ones taken out); when the store answers with the whole list, the body is rebuilt from it. The
 * version lives in the store, so a write through another process or instance is in the next GET.
 */
/** Sees each read of the store by the cache: `changed` false is a hit (the cached bytes still hold), true a miss (re-rendered). */
export interface ListCacheObserver {
  read(changed: boolean): void;
}

export class ListCache {
  readonly #entries: Pick<Entries, 'changesSince'>;
  readonly #observer: ListCacheObserver | undefined;
  readonly #fresh: FreshRead<ListSnapshot>;
  readonly #body = new ListBody();
  #snapshot: ListSnapshot | undefined;

  /** `timeoutMs`: the longest a GET waits for its read (STORE_TIMEOUT_MS), a read in flight before it included. */
  constructor(entries: Pick<Entries, 'changesSince'>, options: { timeoutMs?: number; observer?: ListCacheObserver } = {}) {
    this.#entries = entries;
    this.#observer = options.observer;
    this.#fresh = new FreshRead(() => this.#catchUp(), { gather: true, timeoutMs: options.timeoutMs });
  }

  /** The list at the store's version as read after this call. */
  current(): Promise<ListSnapshot> {
    return this.#fresh.get();
  }

  /** How many entries the store holds, as of a read made after this call (for the metrics: cheap, usually nothing changed). */
  async entries(): Promise<number> {
    await this.current();
    return this.#body.size;
  }

  /** Never runs twice at once (FreshRead), so the body and snapshot change one catch-up at a time. */
  async #catchUp(): Promise<ListSnapshot> {
    const known = this.#snapshot;
    const changes = await this.#entries.changesSince(known?.version ?? -1);
    const unchanged = known !== undefined && changes.version === known.version && (changes.lapsed ?? '') === known.lapsed;
    this.#observer?.read(!unchanged);
    if (unchanged) {
      if (changes.eventsHead === known.eventsHead) return known;
      // No entry changed, yet the log moved on (never expected: each event bumps the version); the head must still be this read's.
      this.#snapshot = new ListSnapshot(known.version, known.body, changes.eventsHead, known.lapsed);
      return this.#snapshot;
    }
    if (known && !changes.complete) {
      this.#body.apply(changes.items);
      this.#body.remove(changes.removed);
    } else {
      this.#body.reset(changes.items);
    }
    this.#snapshot = new ListSnapshot(changes.version, this.#body.render(), changes.eventsHead, changes.lapsed ?? '');
    return this.#snapshot;
  }
}
