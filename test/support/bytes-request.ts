import { request as httpRequest } from 'node:http';
import type { TestApp, Transport } from './app.js';

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
