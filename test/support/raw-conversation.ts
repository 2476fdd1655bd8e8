import { connect } from 'node:net';

/** One answer read off a raw connection. */
export interface RawAnswer {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
}

/** Writes raw bytes to 127.0.0.1:port (chunks `pauseMs` apart) and resolves with everything answered once the server closes. */
export async function rawExchange(port: number, chunks: string[], pauseMs = 0): Promise<string> {
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

/** The answers in raw bytes, in order (bodies framed by Content-Length, as every answer of this service is). */
export function parseAnswers(raw: string): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let rest = raw;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) throw new Error(`incomplete answer: ${JSON.stringify(rest)}`);
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const status = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine!)?.[1];
    if (!status) throw new Error(`not an answer: ${JSON.stringify(rest.slice(0, 200))}`);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    answers.push({ status: Number(status), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return answers;
}

/** Asserts the Error object of a raw answer: exactly code, message, status, the JSON type, nosniff and a request id. */
export function assertRawError(answer: RawAnswer | undefined, status: number, code: string): void {
  const detail = JSON.stringify(answer);
  if (!answer || answer.status !== status) throw new Error(`expected ${status} ${code}, got ${detail}`);
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  if (JSON.stringify(Object.keys(body).sort()) !== '["code","message","status"]') throw new Error(`Error shape: ${detail}`);
  if (body.code !== code || body.status !== status || typeof body.message !== 'string' || body.message === '') throw new Error(`Error fields: ${detail}`);
  if (answer.headers['content-type'] !== 'application/json; charset=utf-8') throw new Error(`content type: ${detail}`);
  if (answer.headers['x-content-type-options'] !== 'nosniff' || !answer.headers['x-request-id']) throw new Error(`headers: ${detail}`);
  // The security headers of every answer (decisions 6.1), raw answers included.
  if (answer.headers['x-frame-options'] !== 'DENY' || !answer.headers['content-security-policy']?.includes("frame-ancestors 'none'")) {
    throw new Error(`security headers: ${detail}`);
  }
}
