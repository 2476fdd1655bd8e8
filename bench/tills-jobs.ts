import { Agent, request } from 'node:http';

/** How a till records a sale: GET then PATCH with If-Match (again on 412), or one POST of a delta. */
export type SaleMethod = 'read-modify-write' | 'adjustment';

/** Clients selling random pets from 1..pets, each one sale at a time, for the warm-up and then the window. */
export interface SalesJob {
  kind: 'sales';
  baseUrl: string;
  /** The whole Authorization header value. */
  authorization: string;
  method: SaleMethod;
  clients: number;
  pets: number;
  warmupSeconds: number;
  durationSeconds: number;
}

/** What one SalesJob did; rates and retries count the sales answered inside the window only. */
export interface SalesResult {
  /** Sales answered 200 inside the window. */
  sales: number;
  perSecond: number;
  /** 412s answered inside the window, each sending a sale back to its GET: per sale, what a sale costs beyond its two requests. */
  retries: number;
  /** Each sale's time, from its first request to its 200, retries included. */
  p50Ms: number;
  p99Ms: number;
  /** Every sale answered 200 in the job (warm-up and the requests still in flight at the end included), by petId - 1. */
  soldByPet: number[];
  /** Sales whose change request got no answer (a socket error or timeout): applied or not, nobody knows. */
  unknown: number;
  /** Answers other than 200 and 412, as "PATCH 409" → count; nothing was sold by them. */
  refused: Record<string, number>;
  /** The first refusal's body, to say why. */
  firstRefusal?: string;
}

/** 1..pets changed in one go: one POST of a batch, or one PATCH each from `connections` clients. */
export interface ChangesJob {
  kind: 'changes';
  baseUrl: string;
  authorization: string;
  how: 'batch' | 'patch';
  /** PATCH only: clients, each one request at a time (the batch is one request). */
  connections: number;
  pets: number;
  /** Pet i is set to firstQuantity + i - 1, so that every change changes a count. */
  firstQuantity: number;
}

/** How long a ChangesJob took, from its first request sent to its last answer read. */
export interface ChangesResult {
  ms: number;
}

export type TillsJob = SalesJob | ChangesJob;
export type TillsResult = SalesResult | ChangesResult;

/** One answer, read whole. */
export interface Answer {
  status: number;
  etag: string | undefined;
  body: string;
}

/** A request takes no longer than this: past it, it counts as unanswered. */
const TIMEOUT_MS = 30_000;

const agents = new Map<string, Agent>();

/** One keep-alive agent per server and client count, kept between jobs, so a round never pays for new connections. */
export function agentFor(baseUrl: string, sockets: number): Agent {
  const key = `${baseUrl} ${sockets}`;
  let agent = agents.get(key);
  if (!agent) agents.set(key, (agent = new Agent({ keepAlive: true, maxSockets: sockets })));
  return agent;
}

/** Sends one request and reads its answer whole; rejects on a socket error or timeout. */
export function call(agent: Agent, baseUrl: string, authorization: string, method: string, path: string, body?: string, ifMatch?: string): Promise<Answer> {
  const url = new URL(baseUrl);
  const headers: Record<string, string | number> = { authorization };
  if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  if (ifMatch !== undefined) headers['if-match'] = ifMatch;
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, method, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, etag: res.headers.etag, body: text }));
      res.once('error', reject);
    });
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error('timed out')));
    req.once('error', reject);
    req.end(body);
  });
}
