import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { ApiError } from '../errors.js';
import { JSON_CONTENT_SECURITY_POLICY, SECURITY_HEADERS } from '../pipeline/pipeline.js';

/** The security headers of every answer (decisions 6.1), as raw header lines: made once. */
const SECURITY_LINES =
  SECURITY_HEADERS.map(([name, value]) => `${name}: ${value}\r\n`).join('') + `content-security-policy: ${JSON_CONTENT_SECURITY_POLICY}\r\n`;

/**
 * An Error answer as raw HTTP/1.1 bytes, for what is answered before any request object exists
 * (an unparseable request, slow headers, a connection over the cap): the same headers as every
 * Error answer, a fresh request id, and Connection: close.
 */
export function rawErrorAnswer(err: ApiError): string {
  const body = JSON.stringify(err.toBody());
  let extra = '';
  for (const name in err.headers) if (name !== 'connection') extra += `${name}: ${err.headers[name]}\r\n`;
  return (
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? 'Error'}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Cache-Control: no-store\r\n' +
    'X-Content-Type-Options: nosniff\r\n' +
    SECURITY_LINES +
    `X-Request-Id: ${randomUUID()}\r\n` +
    extra +
    'Connection: close\r\n\r\n' +
    body
  );
}
