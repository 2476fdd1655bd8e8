import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { ApiError } from '../errors.js';
import { errorAnswer } from '../operations/answer.js';
import { JSON_CONTENT_SECURITY_POLICY, NOSNIFF, SECURITY_HEADERS } from '../pipeline/pipeline.js';

/** What the pipeline adds to an answer without headers of its own (nosniff, the security headers, the JSON policy), as raw lines: made once. */
const PIPELINE_LINES = [['x-content-type-options', NOSNIFF] as const, ...SECURITY_HEADERS, ['content-security-policy', JSON_CONTENT_SECURITY_POLICY] as const]
  .map(([name, value]) => `${name}: ${value}\r\n`)
  .join('');

/**
 * An Error answer as raw HTTP/1.1 bytes, for what is answered before any request object exists
 * (an unparseable request, slow headers, a connection over the cap): the Error answer every lane
 * gives (errorAnswer), the headers the pipeline adds, a fresh request id, and Connection: close.
 */
export function rawErrorAnswer(err: ApiError): string {
  const { status, headers, body = '' } = errorAnswer(err);
  let lines = '';
  for (const name in headers) if (name !== 'connection') lines += `${name}: ${headers[name]}\r\n`;
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
    lines +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    PIPELINE_LINES +
    `x-request-id: ${randomUUID()}\r\n` +
    'connection: close\r\n\r\n' +
    body.toString()
  );
}
