import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { clientAddressReader } from '../../src/pipeline/client-address.js';
import { assertError, buildTestApp, type TestApp } from '../support/app.js';

/** A request from `peer` carrying X-Forwarded-For `forwarded` (leftmost first, as proxies append). */
function from(peer: string, forwarded?: string): IncomingMessage {
  return { socket: { remoteAddress: peer }, headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded } } as unknown as IncomingMessage;
}

test('TRUST_PROXY decides whose X-Forwarded-For is believed', () => {
  const chain = from('10.0.0.2', '198.51.100.9, 203.0.113.7, 10.0.0.1');
  assert.equal(clientAddressReader(false)(chain), '10.0.0.2', 'false: the peer');
  assert.equal(clientAddressReader(0)(chain), '10.0.0.2', '0 hops: the peer');
  assert.equal(clientAddressReader(1)(chain), '10.0.0.1', '1 hop: the address the nearest proxy saw');
  assert.equal(clientAddressReader(2)(chain), '203.0.113.7', '2 hops');
  assert.equal(clientAddressReader('10.0.0.0/8')(chain), '203.0.113.7', 'a CIDR: every proxy inside it is trusted');
  assert.equal(clientAddressReader('10.0.0.2, 10.0.0.1')(chain), '203.0.113.7', 'a list of proxy addresses');
  assert.equal(clientAddressReader('192.0.2.1')(chain), '10.0.0.2', 'an untrusted peer: its header is ignored');
  assert.equal(clientAddressReader(1)(from('10.0.0.2')), '10.0.0.2', 'no header: the peer');
});

test('TRUST_PROXY=true (every hop) is refused, saying why and what to set instead', () => {
  for (const value of ['true', 'TRUE', '0.0.0.0/0', '10.0.0.1, ::/0']) {
    assert.throws(
      () => loadConfig({ TRUST_PROXY: value }),
      (err: unknown) =>
        err instanceof ConfigError &&
        /^TRUST_PROXY=.* would trust every hop: any client could write its own X-Forwarded-For/.test(err.message) &&
        /number of proxies/.test(err.message) &&
        /CIDRs/.test(err.message),
      value,
    );
  }
  assert.throws(() => loadConfig({ TRUST_PROXY: '10.0.0.300' }), (err: unknown) => err instanceof ConfigError && /^TRUST_PROXY must be/.test(err.message));
  assert.throws(() => loadConfig({ TRUST_PROXY: '1000' }), (err: unknown) => err instanceof ConfigError && /^TRUST_PROXY must be a whole number/.test(err.message));
  assert.equal(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy, 'loopback, 10.0.0.0/8');
  assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2);
  assert.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false);
});

/** A bad key from the test's peer (127.0.0.1) with this X-Forwarded-For. */
function guess(api: TestApp, forwarded: string, key = 'inv_live_wrong') {
  return api.request({ method: 'GET', url: '/v1/inventory', key, headers: { 'x-forwarded-for': forwarded } });
}

/**
 * For each form of TRUST_PROXY, the failed-authentication throttle (decisions 2.7) counts the
 * address the trusted proxies saw: a client that rotates what it writes into X-Forwarded-For
 * stays throttled, and another client behind the same proxy is not locked out.
 */
const FORMS: { trust: string; attacker: (i: number) => string; other: string; name: string }[] = [
  // The peer (127.0.0.1) is the client: whatever the header says, it is one address.
  { name: 'false', trust: 'false', attacker: (i) => `198.51.100.${i}`, other: '' },
  // One proxy (the peer) appended the address it saw: the rightmost entry.
  { name: 'a hop count', trust: '1', attacker: (i) => `198.51.100.${i}, 203.0.113.7`, other: '203.0.113.8' },
  { name: 'a proxy address', trust: '127.0.0.1', attacker: (i) => `198.51.100.${i}, 203.0.113.7`, other: '203.0.113.8' },
  // Two proxies inside the trusted ranges: the first address outside them.
  { name: 'CIDRs', trust: '127.0.0.0/8, 10.0.0.0/8', attacker: (i) => `198.51.100.${i}, 203.0.113.7, 10.1.2.3`, other: '203.0.113.8, 10.1.2.3' },
];

for (const form of FORMS) {
  test(`TRUST_PROXY as ${form.name}: the throttle is keyed by the address the trusted proxies saw`, async (t) => {
    const api = await buildTestApp(t, { config: { TRUST_PROXY: form.trust, AUTH_FAILURES_PER_MINUTE: '3' } });
    for (let i = 1; i <= 3; i++) assertError(await guess(api, form.attacker(i)), 401, 'unauthorized');
    // A fourth guess, a fresh forged address, and even the right key: still this client, still throttled.
    assertError(await guess(api, form.attacker(4)), 429, 'rate_limited');
    const withKey = await guess(api, form.attacker(5), api.keys.read);
    assertError(withKey, 429, 'rate_limited');
    assert.ok(Number(withKey.headers['retry-after']) >= 1);
    const other = await api.request({ method: 'GET', url: '/v1/inventory', key: api.keys.read, headers: form.other ? { 'x-forwarded-for': form.other } : {} });
    // Without a proxy every request is the same peer, so "another client" is that same throttled address.
    assert.equal(other.status, form.other ? 200 : 429, 'another client behind the proxy');
    const requests = api.logs().filter((l) => l.msg === 'incoming request' && (l.req as { url: string }).url === '/v1/inventory');
    const addresses = new Set(requests.map((l) => (l.req as { remoteAddress: string }).remoteAddress));
    assert.equal(addresses.size, form.other ? 2 : 1, `the log lines name the same addresses: ${[...addresses].join(' ')}`);
  });
}
