import type { TestApp, TestResponse } from './app.js';

/** PATCH /v1/inventory/{petId} with a JSON body (a string is sent as it is), with the write key unless told another. */
export function patch(api: TestApp, petId: string, body: unknown, options: { key?: string; headers?: Record<string, string> } = {}): Promise<TestResponse> {
  return api.request({
    method: 'PATCH',
    url: `/v1/inventory/${petId}`,
    key: options.key ?? api.keys.write,
    headers: { 'content-type': 'application/json', ...options.headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** POST /v1/inventory/{petId}/adjustments with a JSON body (a string is sent as it is), with the write key unless told another. */
export function adjust(api: TestApp, petId: string, body: unknown, options: { key?: string; headers?: Record<string, string> } = {}): Promise<TestResponse> {
  return api.request({
    method: 'POST',
    url: `/v1/inventory/${petId}/adjustments`,
    key: options.key ?? api.keys.write,
    headers: { 'content-type': 'application/json', ...options.headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** POST /v1/inventory/batch with a JSON body (a string is sent as it is, to write petIds beyond 2^53), with the write key unless told another. */
export function batch(api: TestApp, body: unknown, options: { key?: string; headers?: Record<string, string> } = {}): Promise<TestResponse> {
  return api.request({
    method: 'POST',
    url: '/v1/inventory/batch',
    key: options.key ?? api.keys.write,
    headers: { 'content-type': 'application/json', ...options.headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** GET /v1/inventory/{petId} with the read key. */
export function getItem(api: TestApp, petId: string, headers: Record<string, string> = {}): Promise<TestResponse> {
  return api.request({ method: 'GET', url: `/v1/inventory/${petId}`, key: api.keys.read, headers });
}

/** GET /v1/inventory/{petId}/history with the read key; `query` as it goes on the URL ("?limit=2"). */
export function history(api: TestApp, petId: string, query = ''): Promise<TestResponse> {
  return api.request({ method: 'GET', url: `/v1/inventory/${petId}/history${query}`, key: api.keys.read });
}

/** The body of a history page. */
export interface HistoryJson {
  items: { petId: number; previousQuantity: number; quantity: number; at: string; keyId: string; keyName: string; requestId: string; reason: string | null }[];
  nextCursor: string | null;
}
