/**
 * A PostgreSQL or network failure as one sentence an operator can act on: where the store is
 * (host and port, never the user or password of the URL) and why it cannot be used (connection
 * refused, authentication, DNS, a timeout, a missing database, TLS), or the driver's own message
 * for anything else. The serve start-up, readiness and the CLI all print it.
 */

import { StoreUnavailableError } from '../../errors.js';

/** PostgreSQL's default port, which a URL without one connects to. */
const DEFAULT_PORT = '5432';

/** Where a PostgreSQL URL connects, as `host:port`: its credentials, database and parameters left out. */
export function storeAddress(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'the address in DATABASE_URL';
  }
  // libpq's ?host= names a host (or a socket directory) in place of the URL's.
  const host = parsed.searchParams.get('host') ?? (parsed.hostname === '' ? 'localhost' : decodeURIComponent(parsed.hostname));
  const port = parsed.searchParams.get('port') ?? (parsed.port === '' ? DEFAULT_PORT : parsed.port);
  return host.startsWith('/') ? `${host} (socket, port ${port})` : `${host}:${port}`;
}

/** Node's codes for a failed name lookup. */
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME']);
/** Node's codes for a connection that got no answer in time. */
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT']);
/** Node's codes for a server, route or network that is not there. */
const UNREACHABLE_CODES = new Set(['EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN']);
/** Node's codes for a connection the other side cut. */
const RESET_CODES = new Set(['ECONNRESET', 'ECONNABORTED', 'EPIPE']);
/** What the driver says of a connection that did not open in time (pg-pool, then pg's client). */
const DRIVER_TIMEOUT = /^(timeout exceeded when trying to connect|Connection terminated due to connection timeout)/;
/** What the driver says of a TLS handshake it could not make. */
const DRIVER_TLS = /SSL|TLS|certificate/i;

/** Why a store cannot be used: whether it is a failure to connect at all, and the cause in words. */
export interface Cause {
  /** true: no working connection could be made (refused, login, DNS, timeout, TLS, no such database); false: the store answered, but not now (busy, timeouts of statements, conflicts). */
  connecting: boolean;
  text: string;
}

/** The cause of a failure to use the store, in words; the driver's message where no better one is known. */
export function causeOf(err: unknown): Cause {
  if (!(err instanceof Error)) return { connecting: false, text: String(err) };
  // Node reports a failed connection to every address of a host (localhost: ::1 and 127.0.0.1) as one AggregateError, its message empty.
  if (err instanceof AggregateError && err.errors.length > 0) return causeOf(err.errors.find((inner) => causeOf(inner).connecting) ?? err.errors[0]);
  const code = (err as { code?: unknown }).code;
  const message = err.message;
  if (typeof code === 'string') {
    if (code === 'ECONNREFUSED') return { connecting: true, text: 'connection refused (is PostgreSQL running and listening there?)' };
    if (DNS_CODES.has(code)) return { connecting: true, text: `host not found (DNS: ${code})` };
    if (TIMEOUT_CODES.has(code)) return { connecting: true, text: 'timed out: no answer from the server' };
    if (UNREACHABLE_CODES.has(code)) return { connecting: true, text: `no route to the server (${code})` };
    if (RESET_CODES.has(code)) return { connecting: true, text: `the connection was cut (${code})` };
    // 28000 invalid authorization (no such role, no pg_hba.conf entry), 28P01 wrong password.
    if (code.startsWith('28')) return { connecting: true, text: /authentication failed/i.test(message) ? message : `authentication failed: ${message}` };
    if (code === '3D000') return { connecting: true, text: message };
    if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return { connecting: true, text: `TLS: ${message}` };
    // PgBouncer refuses a role it cannot authenticate with its own words and a protocol-violation code.
    if (code === '08P01' && message === 'no such user') return { connecting: true, text: 'authentication failed: no such user (said by PgBouncer)' };
    if (code.startsWith('08')) return { connecting: true, text: message };
  }
  if (DRIVER_TIMEOUT.test(message)) return { connecting: true, text: 'timed out: the connection did not open in time' };
  if (DRIVER_TLS.test(message)) return { connecting: true, text: `TLS: ${message}` };
  if (/^Connection terminated/.test(message)) return { connecting: true, text: `the connection was cut: ${message}` };
  return { connecting: false, text: message };
}

/** The one sentence for a store at `address` (see storeAddress) that failed with `err`. */
export function unavailableMessage(err: unknown, address: string): string {
  const cause = causeOf(err);
  return `the PostgreSQL store at ${address} ${cause.connecting ? 'cannot be reached' : 'is busy'}: ${cause.text}`;
}

/** A store failure already put in words by unavailableMessage: passed on as it is, never worded twice. */
export class PostgresUnavailableError extends StoreUnavailableError {
  constructor(err: unknown, address: string) {
    super(unavailableMessage(err, address), { cause: err });
    this.name = 'PostgresUnavailableError';
  }
}
