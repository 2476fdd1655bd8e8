import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import type { TestApp, Transport } from './app.js';

/*
 * HTTP without a client in between, so that requests a client would normalise or refuse reach the
 * server unchanged: rawExchange reads the first answer to one request, rawTranscript everything a
 * connection brings until the server closes it; requestBytes reads an answer's bytes as they came.
 */

/** One answer read off a raw connection; `status` 0 when the server closed or went silent without one. */
export interface RawAnswer {
  status: number;
  /** Header names lower-cased; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
  /** Why there is no answer: 'closed' (the server ended the connection) or 'silent' (nothing within the wait). */
  missing?: 'closed' | 'silent';
  /** Where the answer ends in what was read, when its framing tells. */
  end?: number;
  /** With `thenWaitMs`: what the connection brought after this answer, until it closed or the wait ended. */
  after?: Buffer;
}

/**
 * Writes `request` as it is on a new connection and reads the first final answer (1xx skipped),
 * framed by Content-Length, chunked coding, or the connection's end; then drops the connection,
 * or with `thenWaitMs` reads on until it closes or that long passed (`after`).
 */
export function rawExchange(port: number, request: Buffer | string, options: { headOnly?: boolean; waitMs?: number; thenWaitMs?: number } = {}): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let settled = false;
    let first: RawAnswer | undefined;
    const done = (answer: RawAnswer) => {
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const finish = (answer: RawAnswer) => {
      if (settled || first) return;
      if (options.thenWaitMs === undefined || answer.status === 0 || answer.end === undefined) return done(answer);
      first = answer;
      clearTimeout(timer);
      timer = setTimeout(() => settle(), options.thenWaitMs);
    };
    // The first answer, with whatever came after it.
    const settle = () => {
      if (settled || !first) return;
      done({ ...first, after: received.subarray(first.end) });
    };
    let timer = setTimeout(() => finish(parseAnswer(received, true, options.headOnly) ?? noAnswer('silent')), options.waitMs ?? 5000);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (first) return;
      const answer = parseAnswer(received, false, options.headOnly);
      if (answer) finish(answer);
    });
    socket.on('error', () => (first ? settle() : finish(parseAnswer(received, true, options.headOnly) ?? noAnswer('closed'))));
    socket.on('close', () => (first ? settle() : finish(parseAnswer(received, true, options.headOnly) ?? noAnswer('closed'))));
    socket.write(request);
  });
}

/** Writes raw bytes to 127.0.0.1:port (chunks `pauseMs` apart) and resolves with everything answered, as latin1 text, once the server closes. */
export async function rawTranscript(port: number, chunks: string[], pauseMs = 0): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  let answer = '';
  socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
  const closed = new Promise((done) => socket.on('close', done));
  socket.on('error', () => undefined);
  await new Promise((done) => socket.on('connect', done));
  for (const chunk of chunks) {
    socket.write(chunk);
    if (pauseMs) await new Promise((done) => setTimeout(done, pauseMs));
  }
  await closed;
  return answer;
}

function noAnswer(missing: 'closed' | 'silent'): RawAnswer {
  return { status: 0, headers: {}, body: Buffer.alloc(0), missing };
}

/** The first final answer in `data` once complete; with `ended`, whatever a closed connection left (a body up to the close). */
export function parseAnswer(data: Buffer, ended: boolean, headOnly = false): RawAnswer | undefined {
  let start = 0;
  for (;;) {
    const headEnd = data.indexOf('\r\n\r\n', start);
    if (headEnd < 0) return undefined;
    const lines = data.subarray(start, headEnd).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    const bodyStart = headEnd + 4;
    if (status >= 100 && status < 200) {
      start = bodyStart;
      continue;
    }
    if (headOnly || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0), end: bodyStart };
    if (headers['transfer-encoding']?.toLowerCase().includes('chunked')) {
      const chunked = dechunk(data.subarray(bodyStart));
      if (chunked) return { status, headers, body: chunked.body, end: bodyStart + chunked.end };
      return ended ? { status, headers, body: data.subarray(bodyStart) } : undefined;
    }
    if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (data.length - bodyStart >= length) return { status, headers, body: data.subarray(bodyStart, bodyStart + length), end: bodyStart + length };
      return ended ? { status, headers, body: data.subarray(bodyStart) } : undefined;
    }
    return ended ? { status, headers, body: data.subarray(bodyStart) } : undefined;
  }
}

/** Every answer of a transcript, in order (1xx skipped); throws at bytes that are not a complete answer. */
export function parseAnswers(transcript: string): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let rest = Buffer.from(transcript, 'latin1');
  while (rest.length > 0) {
    const answer = parseAnswer(rest, false);
    if (!answer || answer.end === undefined) throw new Error(`incomplete answer: ${JSON.stringify(rest.toString('latin1'))}`);
    if (answer.status === 0) throw new Error(`not an answer: ${JSON.stringify(rest.subarray(0, 200).toString('latin1'))}`);
    answers.push(answer);
    rest = rest.subarray(answer.end);
  }
  return answers;
}

/** Asserts the Error object of a raw answer: exactly code, message, status, the JSON type, nosniff and a request id. */
export function assertRawError(answer: RawAnswer | undefined, status: number, code: string): void {
  const detail = JSON.stringify(answer && { ...answer, body: answer.body.toString('utf8') });
  if (!answer || answer.status !== status) throw new Error(`expected ${status} ${code}, got ${detail}`);
  const body = JSON.parse(answer.body.toString('utf8')) as Record<string, unknown>;
  if (JSON.stringify(Object.keys(body).sort()) !== '["code","message","status"]') throw new Error(`Error shape: ${detail}`);
  if (body.code !== code || body.status !== status || typeof body.message !== 'string' || body.message === '') throw new Error(`Error fields: ${detail}`);
  if (answer.headers['content-type'] !== 'application/json; charset=utf-8') throw new Error(`content type: ${detail}`);
  if (answer.headers['x-content-type-options'] !== 'nosniff' || !answer.headers['x-request-id']) throw new Error(`headers: ${detail}`);
  // The security headers of every answer (decisions 6.1), raw answers included.
  if (answer.headers['x-frame-options'] !== 'DENY' || !answer.headers['content-security-policy']?.includes("frame-ancestors 'none'")) {
    throw new Error(`security headers: ${detail}`);
  }
}

/** A chunked body once its last chunk arrived, with where its coding ends; else undefined. */
function dechunk(data: Buffer): { body: Buffer; end: number } | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) return undefined;
    // The last chunk, without trailers: its size line and an empty line.
    if (size === 0) return data.length >= lineEnd + 4 ? { body: Buffer.concat(parts), end: lineEnd + 4 } : undefined;
    if (data.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/** A request's bytes: the request line, each header as given (no checks, no normalisation), and the body. */
export function rawRequest(requestLine: string, headers: readonly (readonly [string, string])[], body: Buffer | string = ''): Buffer {
  const head = `${requestLine}\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), typeof body === 'string' ? Buffer.from(body, 'utf8') : body]);
}

/** An answer as it came: status, headers, and the body's bytes undecoded. */
export interface BytesResponse {
  status: number;
  headers: Record<string, unknown>;
  body: Buffer;
}

/**
 * A request answered as bytes, compressed bodies as they came and HTML too (api.request's contract
 * checker reads JSON only): for the pages and their files.
 */
export async function requestBytes(api: TestApp, transport: Transport, method: string, url: string, headers: Record<string, string> = {}): Promise<BytesResponse> {
  if (transport === 'inject') {
    const res = await api.app.inject({ method: method as 'GET', url, headers });
    return { status: res.statusCode, headers: res.headers, body: res.rawPayload };
  }
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${api.baseUrl}${url}`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
