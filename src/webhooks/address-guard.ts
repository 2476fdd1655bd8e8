/**
 * The SSRF guard: a webhook must not be a way to reach the service's own network. A URL is checked
 * when added (checkWebhookUrl), and the address actually connected to is checked at every delivery
 * (checkUrlBeforeConnect for IP literals, guardedLookup for names), so a name cannot be rebound to
 * an internal address between the two.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';

/** IPv4 ranges no webhook may reach, as [first address, prefix length]. */
const BLOCKED_V4: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network", 0.0.0.0 unspecified
  ['10.0.0.0', 8], // private (RFC 1918)
  ['100.64.0.0', 10], // carrier-grade NAT: inside someone's network
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12], // private (RFC 1918)
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16], // private (RFC 1918)
  ['198.18.0.0', 15], // benchmarking networks
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and 255.255.255.255 broadcast
];

/** IPv6 ranges no webhook may reach (those that embed an IPv4 address are judged by it, below). */
const BLOCKED_V6: readonly (readonly [string, number])[] = [
  ['64:ff9b:1::', 48], // local-use NAT64
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed inside some networks)
  ['ff00::', 8], // multicast
];

/**
 * Why an address is refused, as a reason the caller frames ("--url is refused: ...", "refused: ..."
 * in the delivery log); names no secret, only the address (and the name that resolved to it).
 */
export function privateAddressReason(address: string, host?: string): string {
  const subject = host === undefined || host === address ? `${address} is` : `${host} resolves to ${address},`;
  return `${subject} a private address (loopback, private, link-local, multicast or unspecified); WEBHOOKS_ALLOW_PRIVATE=true allows it`;
}

/** The error guardedLookup fails with, so a deliverer can tell a refusal from a network error. */
export class RefusedAddressError extends Error {
  /** A code like Node's network errors carry. */
  readonly code = 'ERR_WEBHOOK_ADDRESS_REFUSED';
  constructor(address: string, host?: string) {
    super(`refused: ${privateAddressReason(address, host)}`);
  }
}

function v4Number(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function inV4(ip: number, [base, bits]: readonly [string, number]): boolean {
  const size = 2 ** (32 - bits);
  return Math.floor(ip / size) === Math.floor(v4Number(base) / size);
}

/** The eight 16-bit words of an IPv6 address (a trailing dotted quad and a zone id allowed). */
function v6Words(ip: string): number[] {
  let text = ip.split('%')[0]!;
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const n = v4Number(quad[1]!);
    text = `${text.slice(0, quad.index)}${Math.floor(n / 65536).toString(16)}:${(n % 65536).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const words = (part: string | undefined): number[] => (part ? part.split(':').map((w) => parseInt(w, 16)) : []);
  const front = words(head);
  if (tail === undefined) return front;
  const back = words(tail);
  return [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
}

function inV6(words: readonly number[], [base, bits]: readonly [string, number]): boolean {
  const baseWords = v6Words(base);
  for (let i = 0; i < 8 && bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if ((words[i]! & mask) !== (baseWords[i]! & mask)) return false;
  }
  return true;
}

function embeddedV4(high: number, low: number): string {
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/**
 * Whether a webhook may not connect to this address: loopback, private, CGNAT, link-local,
 * unique-local, multicast, unspecified, broadcast or reserved, an IPv6 address that embeds such an
 * IPv4 one (mapped, compatible, NAT64, 6to4), and anything that is not an IP address at all.
 */
export function isBlockedAddress(ip: string): boolean {
  const version = isIP(ip);
  if (version === 4) {
    const n = v4Number(ip);
    return BLOCKED_V4.some((range) => inV4(n, range));
  }
  if (version !== 6) return true;
  const w = v6Words(ip);
  // ::/96 (unspecified, loopback, IPv4-compatible) and ::ffff:0:0/96 (IPv4-mapped): the IPv4 address inside decides.
  if (w[0] === 0 && w[1] === 0 && w[2] === 0 && w[3] === 0 && w[4] === 0 && (w[5] === 0 || w[5] === 0xffff)) {
    return isBlockedAddress(embeddedV4(w[6]!, w[7]!));
  }
  // NAT64 (64:ff9b::/96) reaches the IPv4 address in its last 32 bits.
  if (w[0] === 0x64 && w[1] === 0xff9b && w[2] === 0 && w[3] === 0 && w[4] === 0 && w[5] === 0) {
    return isBlockedAddress(embeddedV4(w[6]!, w[7]!));
  }
  // 6to4 (2002::/16) tunnels to the IPv4 address in bits 16 to 48.
  if (w[0] === 0x2002) return isBlockedAddress(embeddedV4(w[1]!, w[2]!));
  return BLOCKED_V6.some((range) => inV6(w, range));
}

/** The host of a parsed URL as an address or name: without the brackets of an IPv6 literal. */
export function urlHost(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/**
 * What can be said of a URL without resolving it: why it is refused (scheme, credentials, an IP
 * literal that is blocked), or undefined. The deliverer runs it before every connection, because
 * an IP literal never goes through a lookup.
 */
export function checkUrlBeforeConnect(url: URL, allowPrivate: boolean): string | undefined {
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowPrivate)) {
    return allowPrivate ? 'only http and https URLs are accepted' : 'only https URLs are accepted (http too with WEBHOOKS_ALLOW_PRIVATE=true)';
  }
  // The credentials are not repeated: the message may be logged.
  if (url.username !== '' || url.password !== '') return 'a webhook URL may not hold credentials';
  const host = urlHost(url);
  if (!allowPrivate && isIP(host) !== 0 && isBlockedAddress(host)) return privateAddressReason(host);
  return undefined;
}

/** Why a webhook URL is refused when it is added (not a URL, scheme, credentials, a host that does not resolve or resolves to a blocked address), or undefined when accepted. */
export async function checkWebhookUrl(url: string, allowPrivate: boolean): Promise<string | undefined> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not a URL';
  }
  const problem = checkUrlBeforeConnect(parsed, allowPrivate);
  if (problem !== undefined) return problem;
  const host = urlHost(parsed);
  if (isIP(host) !== 0) return undefined;
  let addresses: LookupAddress[];
  try {
    addresses = await new Promise<LookupAddress[]>((resolve, reject) => {
      dnsLookup(host, { all: true }, (error, found) => (error ? reject(error) : resolve(found)));
    });
  } catch {
    return `the host ${host} does not resolve`;
  }
  if (allowPrivate) return undefined;
  // Every address counts: a client may connect to any of them.
  const blocked = addresses.find(({ address }) => isBlockedAddress(address));
  return blocked === undefined ? undefined : privateAddressReason(blocked.address, host);
}

/**
 * A `lookup` for node:http(s) that resolves like dns.lookup and fails with a RefusedAddressError
 * when an address it would hand to the connection is blocked: the check is on the address
 * connected to, so a name cannot be rebound to an internal host after it was added.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  if (allowPrivate) return dnsLookup;
  return (hostname, options, callback) => {
    dnsLookup(hostname, options, (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => {
      if (error) return callback(error, address, family);
      const found = typeof address === 'string' ? [address] : address.map((entry) => entry.address);
      const blocked = found.find((candidate) => isBlockedAddress(candidate));
      if (blocked !== undefined) return callback(new RefusedAddressError(blocked, hostname), typeof address === 'string' ? '' : [], family);
      callback(null, address, family);
    });
  };
}
