import { randomUUID } from 'node:crypto';
import type { OutgoingHttpHeader, ServerResponse } from 'node:http';

/** The variable that hands a baseline the service's answer headers, as a JSON object (see answerHeadersFromEnv). */
export const ANSWER_HEADERS_VARIABLE = 'BASELINE_ANSWER_HEADERS';

/**
 * The headers of a 200 answer of a baseline that sends what the service's answer carries besides its
 * body (BASELINE_ANSWER_HEADERS, read once): so the bench can tell what writing those headers costs
 * node:http from what the service's own work costs. An `x-request-id` among them is a new UUID per
 * answer, as the service's is. Undefined without the variable: the baseline sends its own two headers.
 */
export function answerHeadersFromEnv(): ((contentType: string, length: number) => OutgoingHttpHeader[]) | undefined {
  const given = givenAnswerHeaders();
  if (!given) return undefined;
  // writeHead's raw form, one flat array of names and values, made once: each answer copies it and adds its own.
  const fixed = given.fixed.flat();
  const { requestId } = given;
  return (contentType, length) => {
    const headers: OutgoingHttpHeader[] = fixed.slice();
    if (requestId) headers.push('x-request-id', randomUUID());
    headers.push('content-type', contentType, 'content-length', String(length));
    return headers;
  };
}

/**
 * The same headers for a baseline that frames its own answers (bare-http1.ts): the header lines of
 * a 200 answer but its length, the fixed ones rendered once. Undefined without the variable.
 */
export function answerHeaderLinesFromEnv(): ((contentType: string) => string) | undefined {
  const given = givenAnswerHeaders();
  if (!given) return undefined;
  const fixed = given.fixed.map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return (contentType) => `${fixed}${given.requestId ? `x-request-id: ${randomUUID()}\r\n` : ''}content-type: ${contentType}\r\n`;
}

/** BASELINE_ANSWER_HEADERS read: the headers every answer carries as they are, and whether each has a new request id. */
function givenAnswerHeaders(): { fixed: [string, string][]; requestId: boolean } | undefined {
  const text = process.env[ANSWER_HEADERS_VARIABLE];
  if (text === undefined) return undefined;
  const given = JSON.parse(text) as Record<string, string>;
  const fixed = Object.entries(given).filter(([name]) => name !== 'x-request-id' && name !== 'content-type');
  return { fixed, requestId: 'x-request-id' in given };
}

/**
 * The headers of an answer of the service, but those node:http writes itself (Date, Connection,
 * Keep-Alive) and the body's framing: what a baseline adds to its own with answerHeadersFromEnv.
 */
export function answerHeadersOf(res: Response): Record<string, string> {
  const framing = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);
  return Object.fromEntries([...res.headers].filter(([name]) => !framing.has(name)));
}

/** The type of every baseline's answers. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** A baseline's JSON answer with its own two headers, type and length. */
export function sendJson(res: ServerResponse, status: number, body: string | Buffer): void {
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/**
 * A baseline's 200 answer of `body`: as sendJson, or with BASELINE_ANSWER_HEADERS the service's
 * headers too (read once, when the baseline's module loads this one).
 */
export const sendOk: (res: ServerResponse, body: string | Buffer) => void = (() => {
  const headers = answerHeadersFromEnv();
  if (!headers) return (res, body) => sendJson(res, 200, body);
  return (res, body) => {
    res.writeHead(200, headers(JSON_TYPE, Buffer.byteLength(body)));
    res.end(body);
  };
})();
