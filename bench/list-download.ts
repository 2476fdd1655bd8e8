import { get } from 'node:http';

export type Coding = 'identity' | 'gzip' | 'br';

export interface Download {
  /** Bytes on the wire: the body as sent, compressed or not. */
  bytes: number;
  seconds: number;
}

/** GET /v1/inventory in one content coding, from the request until the last byte of the body. */
export function downloadList(baseUrl: string, key: string, coding: Coding): Promise<Download> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${key}`, 'accept-encoding': coding };
    get(`${baseUrl}/v1/inventory`, { headers, agent: false }, (res) => {
      let bytes = 0;
      // A refusal's body (the Error object) says why; a list's is only counted.
      let refusal = '';
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (res.statusCode !== 200 && refusal.length < 500) refusal += chunk.toString();
      });
      res.on('error', reject);
      res.on('end', () => {
        const sent = res.headers['content-encoding'] ?? 'identity';
        if (res.statusCode !== 200 || sent !== coding) reject(new Error(`GET /v1/inventory (${coding}) answered ${res.statusCode} in ${sent}${refusal && `: ${refusal.slice(0, 500)}`}`));
        else resolve({ bytes, seconds: (performance.now() - started) / 1000 });
      });
    }).on('error', reject);
  });
}
