import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';

/** Content codings the service answers in, best first. */
export const CONTENT_ENCODINGS = ['br', 'gzip'] as const;
export type ContentEncoding = (typeof CONTENT_ENCODINGS)[number];

/** How hard to compress: brotli's quality (0-11) and gzip's level (1-9). */
export interface CompressionEffort {
  brotliQuality: number;
  gzipLevel: number;
}

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

/**
 * One body and its compressed forms, each made once, when first asked for, in zlib's thread pool
 * (off the event loop); a failed compression is not kept, so the next request tries again.
 */
export class EncodedBody {
  readonly #encoded = new Map<ContentEncoding, Promise<Buffer>>();

  constructor(
    readonly body: Buffer,
    readonly effort: CompressionEffort,
  ) {}

  encoded(encoding: ContentEncoding): Promise<Buffer> {
    let body = this.#encoded.get(encoding);
    if (!body) {
      body = this.#compress(encoding);
      body.catch(() => this.#encoded.delete(encoding));
      this.#encoded.set(encoding, body);
    }
    return body;
  }

  #compress(encoding: ContentEncoding): Promise<Buffer> {
    if (encoding === 'gzip') return gzipped(this.body, { level: this.effort.gzipLevel });
    return brotli(this.body, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: this.effort.brotliQuality,
        [constants.BROTLI_PARAM_SIZE_HINT]: this.body.length,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      },
    });
  }
}
