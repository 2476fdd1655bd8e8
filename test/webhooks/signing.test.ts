import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { newEndpointId, newWebhookSecret } from '../../src/webhooks/secret.js';
import { signingSecrets, webhookHeaders } from '../../src/webhooks/signing.js';

const body = JSON.stringify({ id: 'evt_42', type: 'stock.changed', data: { petId: '7', quantity: 3, note: 'ünïcode' } });

test('a secret is whsec_ + base64 of 32 bytes, an endpoint id whk_ + base64url of 16, each new every time', () => {
  const secret = newWebhookSecret();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.equal(Buffer.from(secret.slice('whsec_'.length), 'base64').length, 32);
  assert.notEqual(newWebhookSecret(), secret);
  const id = newEndpointId();
  assert.match(id, /^whk_[A-Za-z0-9_-]{22}$/);
  assert.equal(Buffer.from(id.slice('whk_'.length), 'base64url').length, 16);
  assert.notEqual(newEndpointId(), id);
});

test('the previous secret signs too until previousSecretUntil, not from then on', () => {
  const until = new Date('2026-01-02T00:00:00Z');
  const endpoint = { secret: 'whsec_new', previousSecret: 'whsec_old', previousSecretUntil: until };
  assert.deepEqual(signingSecrets(endpoint, new Date(until.getTime() - 1)), ['whsec_new', 'whsec_old']);
  assert.deepEqual(signingSecrets(endpoint, until), ['whsec_new']);
  assert.deepEqual(signingSecrets({ secret: 'whsec_new', previousSecret: null, previousSecretUntil: null }, until), ['whsec_new']);
});

test('the headers: content type, the id, the Unix seconds of now, one v1 signature per secret', () => {
  const now = new Date('2026-03-04T05:06:07.890Z');
  const headers = webhookHeaders({ id: 'evt_42', body }, [newWebhookSecret(), newWebhookSecret()], now);
  assert.equal(headers['content-type'], 'application/json');
  assert.equal(headers['webhook-id'], 'evt_42');
  assert.equal(headers['webhook-timestamp'], String(Math.floor(now.getTime() / 1000)));
  assert.match(headers['webhook-signature']!, /^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/);
});

test('the reference standardwebhooks verifier accepts one signature and rejects a tampered body', () => {
  const secret = newWebhookSecret();
  const headers = webhookHeaders({ id: 'evt_42', body }, [secret], new Date());
  assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
  assert.throws(() => new Webhook(secret).verify(body.replace('"quantity":3', '"quantity":4'), headers), /signature/i);
  assert.throws(() => new Webhook(newWebhookSecret()).verify(body, headers), /signature/i);
});

test('with two secrets (a rotation), each one alone verifies the two-signature header', () => {
  const [current, previous] = [newWebhookSecret(), newWebhookSecret()];
  const headers = webhookHeaders({ id: 'evt_43', body }, [current, previous], new Date());
  assert.deepEqual(new Webhook(current).verify(body, headers), JSON.parse(body));
  assert.deepEqual(new Webhook(previous).verify(body, headers), JSON.parse(body));
  assert.throws(() => new Webhook(previous).verify(`${body} `, headers), /signature/i);
});
