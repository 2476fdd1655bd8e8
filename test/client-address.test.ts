import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { clientAddressReader } from '../src/pipeline/client-address.js';

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
  assert.equal(clientAddressReader(true)(chain), '198.51.100.9', 'true: the leftmost, whoever wrote it');
  assert.equal(clientAddressReader('10.0.0.0/8')(chain), '203.0.113.7', 'a CIDR: every proxy inside it is trusted');
  assert.equal(clientAddressReader('10.0.0.2, 10.0.0.1')(chain), '203.0.113.7', 'a list of proxy addresses');
  assert.equal(clientAddressReader('192.0.2.1')(chain), '10.0.0.2', 'an untrusted peer: its header is ignored');
  assert.equal(clientAddressReader(1)(from('10.0.0.2')), '10.0.0.2', 'no header: the peer');
});
