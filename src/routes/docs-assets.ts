import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CONTENT_ENCODINGS, EncodedBody, type ContentEncoding } from '../cache/encoded-body.js';
import type { Answer } from '../operations/answer.js';
import { ifNoneMatchHits } from '../operations/conditional.js';
import { COMPRESS_MIN_BYTES, negotiateEncoding } from '../operations/encoding.js';
import { headerValue } from '../operations/header-value.js';

/** An asset's URL names its content, so a browser may keep it for a year without asking again. */
export const IMMUTABLE_CACHE_CONTROL = 'public, max-age=31536000, immutable';
export const JAVASCRIPT_CONTENT_TYPE = 'text/javascript; charset=utf-8';

/** Brotli quality 9: within 10 % of quality 11 in a twentieth of its time (0.4 s against 7 s for Scalar's bundle), once per process. */
const ASSET_COMPRESSION = { brotliQuality: 9, gzipLevel: 9 };

/**
 * A file the docs page loads, served under a name that holds its content hash (scalar-0123abcd.js),
 * with a strong ETag per coding, and compressed in every coding from the moment it is made.
 */
export class StaticAsset extends EncodedBody {
  /** Its path under /docs/, e.g. assets/scalar-0123abcd.js. */
  readonly file: string;
  readonly #hash: string;
  /** Every ETag the asset is served under, for If-None-Match. */
  readonly etags: readonly string[];

  constructor(
    stem: string,
    readonly contentType: string,
    body: Buffer,
  ) {
    super(body, ASSET_COMPRESSION);
    this.#hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
    this.file = `assets/${stem}-${this.#hash}.js`;
    this.etags = [this.etag(), ...CONTENT_ENCODINGS.map((e) => this.etag(e))];
    if (body.length >= COMPRESS_MIN_BYTES) for (const encoding of CONTENT_ENCODINGS) void this.encoded(encoding).catch(() => {});
  }

  /** A strong ETag per representation: the coding is part of it. */
  etag(encoding?: ContentEncoding): string {
    return encoding ? `"${this.#hash}-${encoding}"` : `"${this.#hash}"`;
  }

  /** The asset in the best coding the request accepts, or 304 when If-None-Match names it. */
  async answer(request: { headers: IncomingHttpHeaders }): Promise<Answer> {
    const encoding = negotiateEncoding(headerValue(request, 'accept-encoding'), this.body.length);
    const headers: Record<string, string> = { vary: 'Accept-Encoding', etag: this.etag(encoding), 'cache-control': IMMUTABLE_CACHE_CONTROL };
    if (ifNoneMatchHits(headerValue(request, 'if-none-match'), this.etags)) return { status: 304, headers };
    headers['content-type'] = this.contentType;
    if (!encoding) return { status: 200, headers, body: this.body };
    return { status: 200, headers: { ...headers, 'content-encoding': encoding }, body: await this.encoded(encoding) };
  }
}

/** Scalar's browser bundle, as its Fastify package ships it (the package's exports name only its plugin, so found beside it). */
function scalarBundlePath(): string {
  const plugin = createRequire(import.meta.url).resolve('@scalar/fastify-api-reference');
  return join(dirname(plugin), 'js', 'standalone.js');
}

let scalar: Promise<StaticAsset> | undefined;

/** Scalar's bundle (3.5 MB), read and compressed once per process, when the docs page is first asked for. */
export function scalarBundle(): Promise<StaticAsset> {
  if (!scalar) {
    scalar = readFile(scalarBundlePath()).then((body) => new StaticAsset('scalar', JAVASCRIPT_CONTENT_TYPE, body));
    // A failed read is not kept: the next request tries again.
    scalar.catch(() => (scalar = undefined));
  }
  return scalar;
}
