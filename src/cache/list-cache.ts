import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { InventoryStore } from '../store/store.js';
import { FreshRead } from './fresh-read.js';
import { ListBody } from './list-body.js';

/** Content codings the list is offered in, best first. */
export const LIST_ENCODINGS = ['br', 'gzip'] as const;
export type ListEncoding = (typeof LIST_ENCODINGS)[number];

const compress: Record<ListEncoding, (body: Buffer) => Promise<Buffer>> = {
  // Quality 5: most of brotli's gain at a fraction of the time of 11, since this runs after every change.
  br: (body) =>
    promisify(brotliCompress)(body, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_SIZE_HINT]: body.length, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT },
    }),
  gzip: (body) => promisify(gzip)(body, { level: 6 }),
};

/** The list at one store version: its JSON bytes, ETags, and compressed forms made once when first asked for. */
export class ListSnapshot {
  readonly #encoded = new Map<ListEncoding, Promise<Buffer>>();
  /** Every ETag this version is served under, for If-None-Match; made once, read per request. */
  readonly etags: readonly string[];

  constructor(
    readonly version: number,
    readonly body: Buffer,
  ) {
    this.etags = [this.etag(), ...LIST_ENCODINGS.map((e) => this.etag(e))];
  }

  /** A strong ETag per representation (RFC 9110 8.8.3): the coding is part of it. */
  etag(encoding?: ListEncoding): string {
    return encoding ? `"inv-${this.version}-${encoding}"` : `"inv-${this.version}"`;
  }

  encoded(encoding: ListEncoding): Promise<Buffer> {
    let body = this.#encoded.get(encoding);
    if (!body) {
      body = compress[encoding](this.body);
      // A failed compression is not kept: the next request tries again.
      body.catch(() => this.#encoded.delete(encoding));
      this.#encoded.set(encoding, body);
    }
    return body;
  }
}

/**
 * GET /v1/inventory served from memory and still exact: each request reads the store version
 * (one indexed row; a read that began after the request, shared by the requests that arrived
 * during the previous one), and only when it moved fetches the entries changed since and re-renders
 * the segments they fall in. The version lives in the store, so a write through another
 * process or instance is seen by the next request here.
 */
export class ListCache {
  readonly #store: Pick<InventoryStore, 'readVersion' | 'changesSince'>;
  readonly #version: FreshRead<number>;
  readonly #body = new ListBody();
  #snapshot: ListSnapshot | undefined;
  #refreshing: Promise<ListSnapshot> | undefined;

  constructor(store: Pick<InventoryStore, 'readVersion' | 'changesSince'>) {
    this.#store = store;
    this.#version = new FreshRead(() => store.readVersion());
  }

  /** The list at the store's current version or later. */
  async current(): Promise<ListSnapshot> {
    const version = await this.#version.get();
    let snapshot = this.#snapshot;
    // A refresh that began before `version` was committed may not hold it: wait for one that does.
    while (!snapshot || snapshot.version < version) {
      this.#refreshing ??= this.#refresh().finally(() => (this.#refreshing = undefined));
      snapshot = await this.#refreshing;
    }
    return snapshot;
  }

  async #refresh(): Promise<ListSnapshot> {
    const known = this.#snapshot?.version;
    const { version, items } = await this.#store.changesSince(known ?? -1);
    if (known === undefined) this.#body.reset(items);
    else this.#body.apply(items);
    this.#snapshot = new ListSnapshot(version, this.#body.render());
    return this.#snapshot;
  }
}
