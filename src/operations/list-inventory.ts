import type { ListEncoding, ListSnapshot } from '../cache/list-cache.js';
import { ifNoneMatchHits } from '../http/conditional.js';
import { negotiateEncoding } from '../http/encoding.js';

/** What GET /v1/inventory answers, whichever lane received it; always sent with Vary: Accept-Encoding. */
export type ListAnswer =
  | { status: 304; etag: string }
  | { status: 200; etag: string; encoding: ListEncoding | undefined; body: Buffer | Promise<Buffer> };

/** The list at `snapshot`'s version for a client's Accept-Encoding and If-None-Match headers. */
export function listInventoryAnswer(snapshot: ListSnapshot, acceptEncoding: string | undefined, ifNoneMatch: string | undefined): ListAnswer {
  const encoding = negotiateEncoding(acceptEncoding, snapshot.body.length);
  const etag = snapshot.etag(encoding);
  if (ifNoneMatchHits(ifNoneMatch, snapshot.etags)) return { status: 304, etag };
  return { status: 200, etag, encoding, body: encoding ? snapshot.encoded(encoding) : snapshot.body };
}
