import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { test } from 'node:test';
import { checkWebhookUrl, guardedLookup, isBlockedAddress } from '../../src/webhooks/address-guard.js';

const blocked = [
  '127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1',
  '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1',
  // The same addresses in other spellings, and IPv6 forms that reach an IPv4 one.
  '127.255.255.254', '172.31.255.255', '100.127.255.255', 'fe80::1%eth0', 'fdff::1', '::ffff:7f00:1', '0:0:0:0:0:0:0:1',
  '::127.0.0.1', '64:ff9b::a9fe:a9fe', '2002:c0a8:101::1', 'FE80::1',
  // Not an address at all: what cannot be judged is refused.
  'localhost', '',
];
const allowed = ['93.184.216.34', '2606:4700::1111', '8.8.8.8', '172.32.0.1', '100.128.0.1', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'];

test('isBlockedAddress: loopback, private, CGNAT, link-local, unique-local, multicast, unspecified, broadcast, mapped', () => {
  for (const ip of blocked) assert.equal(isBlockedAddress(ip), true, ip);
  for (const ip of allowed) assert.equal(isBlockedAddress(ip), false, ip);
});

test('checkWebhookUrl refuses what is not an https URL to a public address', async () => {
  const refusals: [string, RegExp][] = [
    ['http://93.184.216.34/hook', /only https/],
    ['https://127.0.0.1/', /^127\.0\.0\.1 is a private address/],
    ['https://[::1]/', /^::1 is a private address/],
    ['https://10.0.0.1/x', /^10\.0\.0\.1/],
    ['https://169.254.169.254/', /^169\.254\.169\.254/],
    ['https://2130706433/', /^127\.0\.0\.1/], // the URL parser reads a decimal host as 127.0.0.1
    ['https://localhost/', /^localhost resolves to (127\.0\.0\.1|::1), a private address/],
    ['not a url', /not a URL/],
    ['ftp://93.184.216.34/', /only https/],
    ['https://user:hunter2@93.184.216.34/', /credentials/],
    ['https://host.invalid/', /does not resolve/],
  ];
  for (const [url, why] of refusals) {
    const problem = await checkWebhookUrl(url, false);
    assert.match(problem ?? 'accepted', why, url);
    assert.doesNotMatch(problem!, /hunter2/);
  }
  assert.equal(await checkWebhookUrl('https://93.184.216.34/hook', false), undefined);
  assert.equal(await checkWebhookUrl('https://[2606:4700::1111]:8443/hook?x=1', false), undefined);
});

test('with allowPrivate, http and private addresses are accepted; other schemes and credentials still are not', async () => {
  for (const url of ['http://127.0.0.1:8080/hook', 'https://[::1]/', 'http://localhost/', 'http://10.0.0.1/x']) {
    assert.equal(await checkWebhookUrl(url, true), undefined, url);
  }
  assert.match((await checkWebhookUrl('ftp://127.0.0.1/', true))!, /only http and https/);
  assert.match((await checkWebhookUrl('http://a:b@127.0.0.1/', true))!, /credentials/);
});

function lookup(allowPrivate: boolean, host: string, all: boolean): Promise<{ error: Error | null; address: string | LookupAddress[] }> {
  return new Promise((resolve) => {
    guardedLookup(allowPrivate)(host, { all }, (error, address) => resolve({ error, address }));
  });
}

test('guardedLookup refuses a name that resolves to a blocked address, in both callback forms; resolves it with allowPrivate', async () => {
  for (const all of [false, true]) {
    const refused = await lookup(false, 'localhost', all);
    assert.match(refused.error?.message ?? 'resolved', /^refused: localhost resolves to (127\.0\.0\.1|::1), a private address/);
    const resolved = await lookup(true, 'localhost', all);
    assert.equal(resolved.error, null);
    assert.ok(all ? Array.isArray(resolved.address) && resolved.address.length > 0 : typeof resolved.address === 'string');
  }
  assert.match((await lookup(false, '10.0.0.1', false)).error?.message ?? 'resolved', /refused: 10\.0\.0\.1 is a private address/);
  assert.equal((await lookup(false, '8.8.8.8', false)).error, null); // a literal resolves to itself, no network needed
});
