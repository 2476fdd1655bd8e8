import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { CONTENT_ENCODINGS, EncodedBody, type ContentEncoding } from '../cache/encoded-body.js';
import type { Answer } from '../operations/answer.js';
import { ifNoneMatchHits } from '../operations/conditional.js';
import { COMPRESS_MIN_BYTES, negotiateEncoding } from '../operations/encoding.js';
import { headerValue } from '../operations/header-value.js';

/** An asset's URL names its content, so a browser may keep it for a year without asking again. */
export const IMMUTABLE_CACHE_CONTROL = 'public, max-age=31536000, immutable';

/** Brotli quality 9: within 10 % of quality 11 in a twentieth of its time (0.4 s against 7 s for Scalar's bundle), once per process. */
const ASSET_COMPRESSION = { brotliQuality: 9, gzipLevel: 9 };

/** The first 16 hex digits of the SHA-256 of a body: its strong ETag, and the name of a file named by its content. */
export function contentHash(body: Buffer): string {
  return createHash('sha256').update(body).digest('hex').slice(0, 16);
}

/**
 * A file a page loads, under a name that changes with its content (scalar-0123abcd.js, or a
 * bundler's index-BqX2a_9F.js), so it is served as immutable; with a strong ETag per coding, and,
 * when `compressible`, compressed in every coding from the moment it is made.
 */
export class StaticAsset extends EncodedBody {
  readonly #hash: string;
  /** Every ETag the asset is served under, for If-None-Match. */
  readonly etags: readonly string[];

  /**
   * `file`: its path under the route that serves it, e.g. assets/index-BqX2a_9F.js, named by its
   * content already. Formats compressed already (PNG, WOFF2) are not `compressible`: always identity.
   */
  constructor(
    readonly file: string,
    readonly contentType: string,
    body: Buffer,
    readonly compressible = true,
    hash = contentHash(body),
  ) {
    super(body, ASSET_COMPRESSION);
    this.#hash = hash;
    this.etags = compressible ? [this.etag(), ...CONTENT_ENCODINGS.map((e) => this.etag(e))] : [this.etag()];
    if (compressible && body.length >= COMPRESS_MIN_BYTES) for (const encoding of CONTENT_ENCODINGS) void this.encoded(encoding).catch(() => {});
  }

  /** An asset named here by its content: assets/<stem>-<hash>.<extension>. */
  static named(stem: string, extension: string, contentType: string, body: Buffer): StaticAsset {
    const hash = contentHash(body);
    return new StaticAsset(`assets/${stem}-${hash}.${extension}`, contentType, body, true, hash);
  }

  /** A strong ETag per representation: the coding is part of it. */
  etag(encoding?: ContentEncoding): string {
    return encoding ? `"${this.#hash}-${encoding}"` : `"${this.#hash}"`;
  }

  /** The asset in the best coding the request accepts, or 304 when If-None-Match names it. */
  async answer(request: { headers: IncomingHttpHeaders }): Promise<Answer> {
    const encoding = this.compressible ? negotiateEncoding(headerValue(request, 'accept-encoding'), this.body.length) : undefined;
    const headers: Record<string, string> = {
      ...(this.compressible && { vary: 'Accept-Encoding' }),
      etag: this.etag(encoding),
      'cache-control': IMMUTABLE_CACHE_CONTROL,
    };
    if (ifNoneMatchHits(headerValue(request, 'if-none-match'), this.etags)) return { status: 304, headers };
    headers['content-type'] = this.contentType;
    if (!encoding) return { status: 200, headers, body: this.body };
    return { status: 200, headers: { ...headers, 'content-encoding': encoding }, body: await this.encoded(encoding) };
  }
}
