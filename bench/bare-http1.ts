/**
 * The bench's own HTTP/1.1 framing on `node:net`, for one question: what would the service gain by
 * answering its hot operations on raw sockets instead of node:http? A bare durable server run with
 * BARE_HTTP=net (bare-durable.ts) frames its requests and answers here, and the bench sets it beside
 * the same server on node:http. It reads only what a load generator sends: a request line, headers,
 * and a body framed by Content-Length. It answers in request order (pipelined requests too), keeps
 * the connection open, and writes each answer as one string with headers rendered ahead of time.
 * Whatever else it meets (chunked bodies, a head past HEAD_LIMIT, a bad Content-Length) gets a 400
 * and the connection is closed. So it is the floor of such a lane, not a server to deploy.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { JSON_TYPE } from './answer-headers.js';

/** The longest request head read; past it, 400. */
export const HEAD_LIMIT = 16 * 1024;

export interface Http1Request {
  method: string;
  url: string;
  /** The headers by lower-case name; a repeated one keeps its last value (a load sends none twice). */
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Answers one request once: its status, its header lines beyond the framing, rendered ("name: value\r\n"
 * each, so that a server renders its fixed ones once), and its body.
 */
export type Http1Respond = (status: number, headerLines: string, body: string) => void;

export type Http1Handler = (request: Http1Request, respond: Http1Respond) => void;

/** What node:http writes on a kept-alive answer with the bare servers' keepAliveTimeout of 65 s (this framing closes no idle connection: a load keeps each busy). */
const KEEP_ALIVE = 'Connection: keep-alive\r\nKeep-Alive: timeout=65\r\n';

const REASONS: Record<number, string> = { 200: 'OK', 201: 'Created', 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found', 409: 'Conflict', 503: 'Service Unavailable' };

/** A net server that frames requests for `handle`; listen on it as on any net.Server. */
export function http1Server(handle: Http1Handler): Server {
  // Date changes once a second: rendered then, not per answer (as node:http caches it too).
  let date = new Date().toUTCString();
  const clock = setInterval(() => (date = new Date().toUTCString()), 1000);
  clock.unref();
  const server = createServer((socket) => serveConnection(socket, handle, () => date));
  server.on('close', () => clearInterval(clock));
  return server;
}

/** One slot per request read, in order: its answer's bytes once made; the slots at the front are written as they fill. */
interface Slot {
  answerText: string | undefined;
  close: boolean;
}

function serveConnection(socket: Socket, handle: Http1Handler, date: () => string): void {
  socket.setNoDelay(true);
  let buffered: Buffer | undefined;
  let closing = false;
  const slots: Slot[] = [];
  const writeReady = () => {
    let out = '';
    let close = false;
    // A refusal's slot is the last one: nothing is read after it.
    while (slots.length > 0 && slots[0]!.answerText !== undefined) {
      const slot = slots.shift()!;
      out += slot.answerText;
      close ||= slot.close;
    }
    if (out === '' || socket.destroyed) return;
    if (close) socket.end(out);
    else socket.write(out);
  };
  const fill = (slot: Slot, status: number, headerLines: string, body: string, close = false) => {
    if (slot.answerText !== undefined) throw new Error('a request was answered twice');
    slot.answerText =
      `HTTP/1.1 ${status} ${REASONS[status] ?? 'Status'}\r\n${headerLines}content-length: ${Buffer.byteLength(body)}\r\n` +
      `Date: ${date()}\r\n${close ? 'Connection: close\r\n' : KEEP_ALIVE}\r\n${body}`;
    slot.close = close;
    writeReady();
  };
  const refuse = () => {
    closing = true;
    buffered = undefined;
    const slot: Slot = { answerText: undefined, close: true };
    slots.push(slot);
    fill(slot, 400, `content-type: ${JSON_TYPE}\r\n`, '{"code":"bad_request"}', true);
  };

  socket.on('data', (chunk: Buffer) => {
    if (closing) return;
    buffered = buffered === undefined ? chunk : Buffer.concat([buffered, chunk]);
    while (buffered !== undefined) {
      const end: number = buffered.indexOf('\r\n\r\n');
      if (end < 0) {
        if (buffered.length > HEAD_LIMIT) refuse();
        return;
      }
      if (end > HEAD_LIMIT) return refuse();
      const head = parseHead(buffered.toString('latin1', 0, end));
      if (!head) return refuse();
      const { headers } = head;
      const start: number = end + 4;
      const length = headers['content-length'] === undefined ? 0 : contentLength(headers['content-length']);
      if (length === undefined || headers['transfer-encoding'] !== undefined) return refuse();
      if (buffered.length < start + length) return;
      const body = buffered.subarray(start, start + length);
      buffered = buffered.length === start + length ? undefined : buffered.subarray(start + length);
      const slot: Slot = { answerText: undefined, close: false };
      slots.push(slot);
      handle({ method: head.method, url: head.url, headers, body }, (status, lines, text) => fill(slot, status, lines, text));
    }
  });
  // A client that goes away has nobody to answer; its slots are dropped with the socket.
  socket.on('error', () => socket.destroy());
}

/** The request line and headers, or undefined when they are not HTTP/1.1 as a load sends it. */
function parseHead(head: string): Omit<Http1Request, 'body'> | undefined {
  const lines = head.split('\r\n');
  const requestLine = /^([A-Z]+) (\S+) HTTP\/1\.1$/.exec(lines[0]!);
  if (!requestLine) return undefined;
  const headers: Record<string, string> = {};
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { method: requestLine[1]!, url: requestLine[2]!, headers };
}

function contentLength(text: string): number | undefined {
  return /^\d{1,9}$/.test(text) ? Number(text) : undefined;
}
