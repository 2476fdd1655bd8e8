/**
 * Reads one HTTP/1.1 answer to a POST from the bytes of a connection, however they are split:
 * the status line, the headers the sender needs, 1xx interim answers skipped, and the body framed
 * by content-length, chunked, or the connection's end. Strict where Node's own parser (llhttp) is,
 * and its error codes, so a malformed answer fails a delivery as it did over node:http, with the
 * same text in the delivery log.
 */

/** A malformed answer; `code` is llhttp's for the same fault. */
export class MalformedAnswerError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** The status line and headers together may not exceed this (Node's default --max-http-header-size); trailers count too. */
export const MAX_HEAD_BYTES = 16 * 1024;

const CR = 13;
const LF = 10;

// Where the reader is in the answer.
const HEAD = 0;
const LENGTH_BODY = 1;
const CHUNK_SIZE = 2;
const CHUNK_EXTENSION = 3;
const CHUNK_SIZE_LF = 4;
const CHUNK_DATA = 5;
const CHUNK_DATA_CR = 6;
const CHUNK_DATA_LF = 7;
const TRAILERS = 8;
const UNTIL_CLOSE = 9;
const COMPLETE = 10;

/** tchar of RFC 9110: what a header name may be made of. */
const TOKEN = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") TOKEN[c.charCodeAt(0)] = 1;

/** Hex digit values, -1 for anything else. */
const HEX = new Int8Array(256).fill(-1);
for (let i = 0; i < 16; i++) {
  HEX['0123456789abcdef'.charCodeAt(i)] = i;
  HEX['0123456789ABCDEF'.charCodeAt(i)] = i;
}

/** A chunk size past this many hex digits cannot be honest (and would lose precision). */
const MAX_CHUNK_SIZE_DIGITS = 12;

function malformed(code: string, message: string): never {
  throw new MalformedAnswerError(code, message);
}

/** Whether a comma-separated header value lists `token` (case-insensitive), as Connection and Transfer-Encoding do. */
function lists(value: string, token: string): boolean {
  return value.split(',').some((item) => item.trim().toLowerCase() === token);
}

/**
 * One answer's reader: feed it the connection's bytes as they come, and `end()` when the receiver
 * closed. A reader is for one answer; a kept-alive connection takes a new one for the next.
 */
export class AnswerReader {
  /** The final status once its head is read; 0 before. */
  status = 0;
  /** The first Retry-After header's value, as Node keeps it. */
  retryAfter: string | undefined;
  /** Whether the connection can carry another exchange once this answer is complete. */
  reusable = false;
  /** The receiver's Keep-Alive timeout hint in seconds, when it gave one. */
  keepAliveSeconds: number | undefined;
  /** Whether any byte of the answer came: a kept-alive connection that fails before one was closed by the receiver, not failed by the request. */
  started = false;
  /** Whether bytes came after the complete answer: nothing was asked for them, so the connection cannot be trusted again. */
  trailing = false;

  readonly #onBody: (bytes: Buffer) => void;
  #state = HEAD;
  /** The part of a head or trailer line that the last chunk ended in. */
  #partial: Buffer | undefined;
  /** Bytes of head (and trailer) lines read, against MAX_HEAD_BYTES. */
  #headBytes = 0;
  /** Body bytes still to come: of the body (LENGTH_BODY) or of the current chunk. */
  #remaining = 0;
  #chunkSizeDigits = 0;
  // Of the head being read (a 1xx interim answer's, then the final one's).
  #statusRead = false;
  #minor = 1;
  #contentLength: number | undefined;
  #chunked = false;
  #transferEncoding = false;
  #close = false;
  #keepAlive = false;

  constructor(onBody: (bytes: Buffer) => void) {
    this.#onBody = onBody;
  }

  /** Whether the answer was read to its end. */
  get complete(): boolean {
    return this.#state === COMPLETE;
  }

  /** Whether the status line and headers of the final answer were read. */
  get headRead(): boolean {
    return this.#state !== HEAD;
  }

  /** Reads the next bytes of the connection; throws a MalformedAnswerError. */
  feed(chunk: Buffer): void {
    if (chunk.length > 0) this.started = true;
    let at = 0;
    while (at < chunk.length) {
      switch (this.#state) {
        case HEAD:
        case TRAILERS:
          at = this.#lines(chunk, at);
          break;
        case LENGTH_BODY:
        case CHUNK_DATA: {
          const end = Math.min(chunk.length, at + this.#remaining);
          this.#remaining -= end - at;
          this.#onBody(chunk.subarray(at, end));
          at = end;
          if (this.#remaining === 0) this.#state = this.#state === LENGTH_BODY ? COMPLETE : CHUNK_DATA_CR;
          break;
        }
        case UNTIL_CLOSE:
          this.#onBody(at === 0 ? chunk : chunk.subarray(at));
          at = chunk.length;
          break;
        case COMPLETE:
          this.trailing = true;
          return;
        default:
          this.#chunkFraming(chunk[at]!);
          at++;
      }
    }
  }

  /** The receiver closed the connection: true when that ends the answer (a body read to the close), false when it cut it short. */
  end(): boolean {
    if (this.#state === UNTIL_CLOSE) this.#state = COMPLETE;
    return this.#state === COMPLETE;
  }

  /** The framing bytes of a chunked body, one at a time: they are few. */
  #chunkFraming(byte: number): void {
    switch (this.#state) {
      case CHUNK_SIZE: {
        const digit = HEX[byte]!;
        if (digit >= 0) {
          if (++this.#chunkSizeDigits > MAX_CHUNK_SIZE_DIGITS) malformed('HPE_INVALID_CHUNK_SIZE', 'Chunk size overflow');
          this.#remaining = this.#remaining * 16 + digit;
        } else if (this.#chunkSizeDigits > 0 && byte === 0x3b /* ; */) this.#state = CHUNK_EXTENSION;
        else if (this.#chunkSizeDigits > 0 && byte === CR) this.#state = CHUNK_SIZE_LF;
        else if (this.#chunkSizeDigits > 0 && byte === LF) malformed('HPE_CR_EXPECTED', 'Missing expected CR after chunk size');
        else malformed('HPE_INVALID_CHUNK_SIZE', 'Invalid character in chunk size');
        break;
      }
      case CHUNK_EXTENSION:
        // Extensions mean nothing to us: skipped to the line's end, bounded like a header line.
        if (byte === CR) this.#state = CHUNK_SIZE_LF;
        else if (byte === LF) malformed('HPE_CR_EXPECTED', 'Missing expected CR after chunk extensions');
        else if ((byte < 0x20 && byte !== 9) || byte === 0x7f) malformed('HPE_STRICT', 'Invalid character in chunk extensions');
        else if (++this.#headBytes > MAX_HEAD_BYTES) malformed('HPE_HEADER_OVERFLOW', 'Header overflow');
        break;
      case CHUNK_SIZE_LF:
        if (byte !== LF) malformed('HPE_STRICT', 'Expected LF after chunk size');
        this.#chunkSizeDigits = 0;
        this.#state = this.#remaining === 0 ? TRAILERS : CHUNK_DATA;
        break;
      case CHUNK_DATA_CR:
        if (byte !== CR) malformed('HPE_STRICT', 'Expected CR after chunk data');
        this.#state = CHUNK_DATA_LF;
        break;
      case CHUNK_DATA_LF:
        if (byte !== LF) malformed('HPE_STRICT', 'Expected LF after chunk data');
        this.#state = CHUNK_SIZE;
        break;
    }
  }

  /** Reads whole CRLF-ended lines of a head or of trailers from `at`; returns where it stopped. */
  #lines(chunk: Buffer, at: number): number {
    while (this.#state === HEAD || this.#state === TRAILERS) {
      const lf = chunk.indexOf(LF, at);
      if (lf === -1) {
        const rest = chunk.subarray(at);
        this.#partial = this.#partial === undefined ? Buffer.from(rest) : Buffer.concat([this.#partial, rest]);
        if (this.#headBytes + this.#partial.length > MAX_HEAD_BYTES) malformed('HPE_HEADER_OVERFLOW', 'Header overflow');
        return chunk.length;
      }
      let line = chunk.subarray(at, lf);
      if (this.#partial !== undefined) {
        line = Buffer.concat([this.#partial, line]);
        this.#partial = undefined;
      }
      at = lf + 1;
      this.#headBytes += line.length + 1;
      if (this.#headBytes > MAX_HEAD_BYTES) malformed('HPE_HEADER_OVERFLOW', 'Header overflow');
      if (line.length === 0 || line[line.length - 1] !== CR) malformed('HPE_CR_EXPECTED', 'Missing expected CR after header line');
      this.#line(line.subarray(0, line.length - 1));
    }
    return at;
  }

  /** One line of a head or of trailers, without its CRLF. */
  #line(line: Buffer): void {
    if (this.#state === TRAILERS) {
      if (line.length === 0) this.#state = COMPLETE;
      else this.#header(line, false);
    } else if (!this.#statusRead) {
      // Empty lines before a status line are tolerated, as llhttp does.
      if (line.length > 0) this.#statusLine(line);
    } else if (line.length === 0) this.#headEnd();
    else this.#header(line, true);
  }

  #statusLine(line: Buffer): void {
    // "HTTP/" DIGIT "." DIGIT SP 3DIGIT [SP reason]
    if (line.length < 5 || line.toString('latin1', 0, 5) !== 'HTTP/') malformed('HPE_INVALID_CONSTANT', 'Expected HTTP/');
    const version = line.toString('latin1', 5, 8);
    if ((version !== '1.1' && version !== '1.0' && version !== '0.9') || line[8] !== 0x20) malformed('HPE_INVALID_VERSION', 'Invalid HTTP version');
    const digits = line.toString('latin1', 9, 12);
    if (!/^\d{3}$/.test(digits) || (line.length > 12 && line[12] !== 0x20)) malformed('HPE_INVALID_STATUS', 'Invalid status code');
    if (line.indexOf(CR, 12) !== -1) malformed('HPE_LF_EXPECTED', 'Expected LF after CR');
    this.status = Number(digits);
    this.#statusRead = true;
    this.#minor = version === '1.1' ? 1 : 0;
  }

  /** One `name: value` line; only a head's (not a trailer's) few headers that frame or describe the answer are kept. */
  #header(line: Buffer, inHead: boolean): void {
    let colon = 0;
    while (colon < line.length && TOKEN[line[colon]!] === 1) colon++;
    if (colon === 0 || colon === line.length || line[colon] !== 0x3a /* : */) malformed('HPE_INVALID_HEADER_TOKEN', 'Invalid header token');
    let start = colon + 1;
    let end = line.length;
    for (let i = start; i < end; i++) {
      const byte = line[i]!;
      if (byte === CR) malformed('HPE_LF_EXPECTED', 'Expected LF after CR');
      if ((byte < 0x20 && byte !== 9) || byte === 0x7f) malformed('HPE_INVALID_HEADER_TOKEN', 'Invalid header value char');
    }
    if (!inHead) return;
    while (start < end && (line[start] === 0x20 || line[start] === 9)) start++;
    while (end > start && (line[end - 1] === 0x20 || line[end - 1] === 9)) end--;
    const name = line.toString('latin1', 0, colon).toLowerCase();
    switch (name) {
      case 'content-length': {
        const value = line.toString('latin1', start, end);
        if (this.#contentLength !== undefined) malformed('HPE_UNEXPECTED_CONTENT_LENGTH', 'Duplicate Content-Length');
        if (!/^\d{1,15}$/.test(value)) malformed('HPE_INVALID_CONTENT_LENGTH', 'Invalid character in Content-Length');
        this.#contentLength = Number(value);
        break;
      }
      case 'transfer-encoding': {
        // The last coding decides: chunked only if it is chunked.
        const codings = line.toString('latin1', start, end).split(',');
        this.#transferEncoding = true;
        this.#chunked = codings[codings.length - 1]!.trim().toLowerCase() === 'chunked';
        break;
      }
      case 'connection': {
        const value = line.toString('latin1', start, end);
        if (lists(value, 'close')) this.#close = true;
        if (lists(value, 'keep-alive')) this.#keepAlive = true;
        break;
      }
      case 'retry-after':
        this.retryAfter ??= line.toString('latin1', start, end);
        break;
      case 'keep-alive': {
        const hint = /^timeout=(\d+)/.exec(line.toString('latin1', start, end));
        if (hint) this.keepAliveSeconds = Number(hint[1]);
        break;
      }
    }
  }

  /** The empty line after a head: skip an interim answer, or frame the final one's body. */
  #headEnd(): void {
    const status = this.status;
    if (status >= 100 && status < 200 && status !== 101) {
      this.#startHead();
      return;
    }
    // A switch of protocols nobody asked for: the connection is no longer HTTP.
    if (status === 101) malformed('HPE_INVALID_STATUS', 'Unexpected 101 Switching Protocols');
    if (this.#transferEncoding && this.#contentLength !== undefined) {
      malformed(this.#chunked ? 'HPE_INVALID_TRANSFER_ENCODING' : 'HPE_INVALID_CONTENT_LENGTH', 'Content-Length can\'t be present with Transfer-Encoding');
    }
    let framed = true;
    if (status === 204 || status === 304) this.#state = COMPLETE;
    else if (this.#chunked) this.#state = CHUNK_SIZE;
    else if (this.#contentLength !== undefined) this.#state = this.#contentLength === 0 ? COMPLETE : LENGTH_BODY;
    else {
      this.#state = UNTIL_CLOSE;
      framed = false;
    }
    this.#remaining = this.#contentLength ?? 0;
    this.#headBytes = 0;
    this.reusable = framed && !this.#close && (this.#minor === 1 || this.#keepAlive);
  }

  /** Forgets an interim answer's head: the final one follows. */
  #startHead(): void {
    this.status = 0;
    this.#statusRead = false;
    this.retryAfter = undefined;
    this.keepAliveSeconds = undefined;
    this.#contentLength = undefined;
    this.#chunked = false;
    this.#transferEncoding = false;
    this.#close = false;
    this.#keepAlive = false;
  }
}
