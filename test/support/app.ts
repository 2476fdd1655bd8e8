import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp, type AppOptions } from '../../src/app.js';
import { issueApiKey } from '../../src/auth/issue-key.js';
import { loadConfig, type Config, type ConfigVariable } from '../../src/config.js';
import type { Environment, Scope } from '../../src/domain/api-key.js';
import type { InventoryItem } from '../../src/schemas/inventory.js';
import { openStore } from '../../src/store/open.js';
import { PORT_NAMES, type PortName, type Store } from '../../src/store/store.js';
import { openTestStore, type Backend } from './backends.js';
import { ContractChecker } from './contract.js';

export type Transport = 'inject' | 'http';
export const TRANSPORTS: Transport[] = ['inject', 'http'];

export interface TestRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  /** Sent as-is; objects are JSON-encoded with Content-Type application/json unless given. */
  body?: string | object;
  /** Bearer token to send; overrides `headers.authorization`. */
  key?: string;
}

export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json<T = unknown>(): T;
}

export interface TestApp {
  app: FastifyInstance;
  store: Store;
  config: Config;
  /** Keys made for the test: write (inventory:write) and read (inventory:read). */
  keys: { write: string; read: string };
  /** Every log line the app wrote. */
  logs: () => Record<string, unknown>[];
  /** Where the app listens, e.g. http://127.0.0.1:PORT (transport 'http' only). */
  baseUrl: string;
  /** Sends a request over the chosen transport and checks the response against the OpenAPI document. */
  request(req: TestRequest): Promise<TestResponse>;
  contract: ContractChecker;
}

export interface TestAppOptions {
  transport?: Transport;
  /** The store's backend, on a fresh database of its own (default sqlite). */
  backend?: Backend;
  /** Open the store on this existing database (a DATABASE_URL) instead of a fresh one; the caller removes the database. */
  databaseUrl?: string;
  config?: Partial<Record<ConfigVariable, string>>;
  items?: readonly InventoryItem[];
  /** Swap the store the app gets, e.g. to make one call fail. */
  wrapStore?: (store: Store) => Store;
  /** The request rules, given the standard ones (see buildApp). */
  rules?: AppOptions['rules'];
  /** Metrics the app reports to (as with METRICS_PORT set), read with metrics.render(). */
  metrics?: AppOptions['metrics'];
  /** The built dashboard /dashboard serves (see buildApp); default the project's dist/dashboard. */
  dashboardDirectory?: string;
  /** How often an idle event stream gets a comment line (see buildApp). */
  eventHeartbeatMs?: number;
  /**
   * false: the app's webhook dispatcher is closed before the test begins, for tests that read endpoints
   * as the store holds them; a running one acts on an endpoint the moment it is added (decisions 10.11).
   */
  delivering?: false;
}

/** Builds the app on a fresh store of the chosen backend with two keys; closed when the test ends. */
export async function buildTestApp(t: TestContext, options: TestAppOptions = {}): Promise<TestApp> {
  // The test's own synchronous work runs on the app's event loop, where it would count as overload: shedding is
  // off unless a test turns it on (test/hardening/limits.test.ts); server processes keep the default.
  // The webhook dispatcher claims endpoints at start, then only when a test asks (app.webhookDispatcher.leaseNow()):
  // a lease round on its own timer would start delivering to a test's endpoints at a moment of its own choosing.
  const config = loadConfig({ LOG_LEVEL: 'info', MAX_EVENT_LOOP_DELAY_MS: '0', WEBHOOK_LEASE_MS: '600000', ...options.config });
  // Registered before the database's own cleanup (node:test runs after hooks in order), so the app, then the store
  // (if the app was never built; else a no-op), close before the database is removed.
  const toClose: { close(): Promise<unknown> }[] = [];
  t.after(async () => {
    for (const c of toClose.reverse()) await c.close();
  });
  const store = options.databaseUrl ? await openStore(options.databaseUrl) : await openTestStore(options.backend ?? 'sqlite', t);
  toClose.push(store);
  if (options.items?.length) await store.changes.addItems(options.items);
  const write = await makeKey(store, config.environment, ['inventory:write']);
  const read = await makeKey(store, config.environment, ['inventory:read']);
  const logStream = new PassThrough();
  const lines: string[] = [];
  logStream.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  const app = await buildApp({
    config,
    store: options.wrapStore ? options.wrapStore(store) : store,
    logStream,
    ...(options.rules ? { rules: options.rules } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.dashboardDirectory ? { dashboardDirectory: options.dashboardDirectory } : {}),
    ...(options.eventHeartbeatMs !== undefined ? { eventHeartbeatMs: options.eventHeartbeatMs } : {}),
  });
  toClose.push(app);
  // The claim at start runs on its own: on PostgreSQL it could come after a test's first endpoints were added, and deliver to them.
  await app.webhookDispatcher.leaseNow();
  if (options.delivering === false) await app.webhookDispatcher.close();

  const send = options.transport === 'http' ? await httpTransport(app) : injectTransport(app);
  const address = app.server.address();
  const docResponse = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
  const contract = ContractChecker.of(docResponse.body);

  return {
    app,
    store,
    config,
    get baseUrl() {
      if (typeof address !== 'object' || address === null) throw new Error("baseUrl needs buildTestApp(t, { transport: 'http' })");
      return `http://127.0.0.1:${address.port}`;
    },
    keys: { write, read },
    logs: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    contract,
    async request(req) {
      const headers: Record<string, string> = { ...req.headers };
      if (req.key !== undefined) headers.authorization = `Bearer ${req.key}`;
      let payload: string | undefined;
      if (typeof req.body === 'object') {
        payload = JSON.stringify(req.body);
        headers['content-type'] ??= 'application/json';
      } else {
        payload = req.body;
      }
      const res = await send(req.method, req.url, headers, payload);
      contract.check(req.method, req.url, res.status, res.headers, res.text);
      return res;
    },
  };
}

export async function makeKey(store: Store, environment: Environment, scopes: Scope[], expiresAt: Date | null = null): Promise<string> {
  return (await issueApiKey(store.keys, { name: `test ${scopes.join(' ')}`, environment, scopes, expiresAt })).key;
}

type Send = (method: string, url: string, headers: Record<string, string>, body: string | undefined) => Promise<TestResponse>;

function response(status: number, headers: TestResponse['headers'], text: string): TestResponse {
  return { status, headers, text, json: <T>() => JSON.parse(text) as T };
}

function injectTransport(app: FastifyInstance): Send {
  return async (method, url, headers, body) => {
    const res = await app.inject({ method: method as 'GET', url, headers, ...(body !== undefined ? { payload: body } : {}) });
    return response(res.statusCode, res.headers as TestResponse['headers'], res.body);
  };
}

/** Listens on a random loopback port and talks to it with node:http, so nothing is simulated. */
async function httpTransport(app: FastifyInstance): Promise<Send> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return (method, url, headers, body) =>
    new Promise((resolve, reject) => {
      // Frame every body: node:http sends DELETE and OPTIONS bodies unframed otherwise.
      const framed = body === undefined ? headers : { 'content-length': String(Buffer.byteLength(body)), ...headers };
      const req = httpRequest({ host: '127.0.0.1', port, method, path: url, headers: framed, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(response(res.statusCode ?? 0, res.headers, Buffer.concat(chunks).toString())));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
}

/**
 * Asserts the spec's Error object: exactly code, message, status, with status equal to the HTTP
 * status; with `index`, a batch's Error object that names that change (its `index` field, and
 * `changes[index]` in the message: decisions 5.12; a reservation's `items[index]`, decisions 12.5).
 */
export function assertError(res: TestResponse, status: number, code: string, index?: number): { code: string; message: string; status: number } {
  const body = res.json<{ code: string; message: string; status: number; index?: number }>();
  const detail = `${res.status} ${res.text}`;
  if (res.status !== status) throw new Error(`expected ${status} ${code}, got ${detail}`);
  if (body.code !== code) throw new Error(`expected code ${code}, got ${detail}`);
  const fields = index === undefined ? '["code","message","status"]' : '["code","index","message","status"]';
  if (JSON.stringify(Object.keys(body).sort()) !== fields) throw new Error(`Error shape: ${detail}`);
  const named = (list: string) => body.message.startsWith(`${list}[${index}]: `);
  if (index !== undefined && (body.index !== index || !(named('changes') || named('items')))) throw new Error(`expected index ${index}: ${detail}`);
  if (body.status !== status || typeof body.message !== 'string' || body.message.length === 0) throw new Error(`Error fields: ${detail}`);
  if (!/^application\/json; charset=utf-8$/i.test(String(res.headers['content-type']))) throw new Error(`content type: ${detail}`);
  return body;
}

/** Each member of each port of a store. */
type PortMember = { [P in PortName]: keyof Store[P] }[PortName];

/** The real store, except that `member` (of whichever port has it) rejects with `error`: for the paths only a broken store reaches. */
export function failingOn(store: Store, member: PortMember, error: Error): Store {
  const port = PORT_NAMES.find((name) => member in store[name]);
  if (!port) throw new Error(`no port of the store has ${member}`);
  return { ...store, close: () => store.close(), [port]: { ...store[port], [member]: async () => Promise.reject(error) } };
}
