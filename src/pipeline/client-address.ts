import type { IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';

/**
 * How the client's address is read, from TRUST_PROXY: the socket's peer (false, 0), through the
 * nearest N hops (a count), or through the proxies at these addresses or CIDRs (a comma-separated
 * list). Never through every hop: the config refuses it, since X-Forwarded-For would then be the
 * client's to write. Both lanes read it this way, for the failed-authentication throttle and the
 * log lines.
 */
export function clientAddressReader(trustProxy: false | number | string): (req: IncomingMessage) => string {
  if (trustProxy === false || trustProxy === 0) return (req) => req.socket.remoteAddress ?? '';
  const trust =
    typeof trustProxy === 'number'
      ? (_address: string, hop: number) => hop < trustProxy
      : proxyAddr.compile(trustProxy.split(',').map((s) => s.trim()));
  return (req) => proxyAddr(req, trust);
}
