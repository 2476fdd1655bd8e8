/**
 * How the webhook sender's connections are opened: undici's own connector (TLS with its session
 * cache, the connect timeout), resolving names through the SSRF guard, and then the address the
 * socket is actually connected to checked again before undici writes a byte of the request.
 */
import type { LookupFunction } from 'node:net';
import { buildConnector } from 'undici';
import { guardedLookup, isBlockedAddress, RefusedAddressError } from './address-guard.js';

export interface ConnectorOptions {
  /** WEBHOOKS_ALLOW_PRIVATE: nothing is refused. */
  allowPrivate: boolean;
  /** A connection not made within this fails (the attempt's own deadline is the sender's). */
  timeoutMs: number;
  /** How names are resolved; by default through the guard. A test passes an unguarded one to reach the second check. */
  lookup?: LookupFunction;
}

/**
 * A connector for undici's `connect` option. A name is refused at its lookup, before any packet is
 * sent (an IP literal never goes through one: the sender checks it before dispatching), and the
 * remote address of the connected socket is checked whatever path led to it.
 */
export function guardedConnector(options: ConnectorOptions): buildConnector.connector {
  const lookup = options.lookup ?? guardedLookup(options.allowPrivate);
  // The kernel's keep-alive probes find a receiver that vanished while the connection sat idle.
  const connect = buildConnector({ timeout: options.timeoutMs, lookup, keepAlive: true, keepAliveInitialDelay: 1000 });
  if (options.allowPrivate) return connect;
  return (target, callback) => {
    connect(target, (error, socket) => {
      if (error !== null) return callback(error, null);
      const address = socket.remoteAddress;
      if (address !== undefined && !isBlockedAddress(address)) return callback(null, socket);
      socket.destroy();
      callback(new RefusedAddressError(address ?? 'an address Node did not report', target.hostname), null);
    });
  };
}
