import type { IncomingHttpHeaders } from 'node:http';
import type { Answer } from '../operations/answer.js';
import { ifNoneMatchHits } from '../operations/conditional.js';
import { headerValue } from '../operations/header-value.js';
import { HTML_CONTENT_TYPE } from './content-type.js';
import { contentHash } from './static-asset.js';

/** A page names its assets by content hash, so it must be revalidated each time; a 304 costs a few bytes. */
export const PAGE_CACHE_CONTROL = 'no-cache';

/**
 * An HTML page that loads content-named assets: revalidated on every use by its strong ETag, with
 * a Content-Security-Policy of its own (the pipeline keeps it: it sets the JSON policy only where
 * an answer has none).
 */
export class HtmlPage {
  readonly etag: string;
  readonly #answer: Answer;
  readonly #notModified: Answer;

  constructor(html: string | Buffer, contentSecurityPolicy: string) {
    const body = typeof html === 'string' ? Buffer.from(html) : html;
    this.etag = `"${contentHash(body)}"`;
    const headers = { 'content-type': HTML_CONTENT_TYPE, 'content-security-policy': contentSecurityPolicy, 'cache-control': PAGE_CACHE_CONTROL, etag: this.etag };
    this.#answer = { status: 200, headers, body };
    // A browser takes a 304's headers onto its cached copy: without the page's own policy, the
    // pipeline's JSON policy (default-src 'none') would block every script and style on reload.
    this.#notModified = { status: 304, headers: { etag: this.etag, 'cache-control': PAGE_CACHE_CONTROL, 'content-security-policy': contentSecurityPolicy } };
  }

  /** The page, or 304 when If-None-Match names it. */
  answer(request: { headers: IncomingHttpHeaders }): Answer {
    if (!ifNoneMatchHits(headerValue(request, 'if-none-match'), [this.etag])) return this.#answer;
    return this.#notModified;
  }
}
