/**
 * Signing a delivery to the Standard Webhooks 1.0 specification: the receiver checks an HMAC over
 * the id, the attempt's timestamp and the exact body bytes, with any of the secrets it knows.
 */
import { createHmac } from 'node:crypto';
import type { WebhookEndpoint } from '../domain/webhook.js';
import { boundedMemo } from './bounded-memo.js';

const SECRET_PREFIX = 'whsec_';

/** The secrets that sign a delivery at `now`: the current one, and the previous one while its rotation's grace lasts. */
export function signingSecrets(
  endpoint: Pick<WebhookEndpoint, 'secret' | 'previousSecret' | 'previousSecretUntil'>,
  now: Date,
): string[] {
  const secrets = [endpoint.secret];
  if (endpoint.previousSecret !== null && endpoint.previousSecretUntil !== null && now.getTime() < endpoint.previousSecretUntil.getTime()) {
    secrets.push(endpoint.previousSecret);
  }
  return secrets;
}

/** The key bytes of a secret, decoded once per secret, not per delivery: the specification signs with the base64-decoded part after `whsec_`, not the text. */
const keyBytes = boundedMemo(1000, (secret: string): Buffer =>
  Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64'),
);

/** The headers of one attempt: content type, webhook-id, webhook-timestamp (Unix seconds of `now`) and one `v1,` signature per secret. */
export function webhookHeaders(message: { id: string; body: string }, secrets: readonly string[], now: Date): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000).toString();
  const signed = `${message.id}.${timestamp}.${message.body}`;
  const signatures = secrets.map((secret) => `v1,${createHmac('sha256', keyBytes(secret)).update(signed, 'utf8').digest('base64')}`);
  return {
    'content-type': 'application/json',
    'webhook-id': message.id,
    'webhook-timestamp': timestamp,
    'webhook-signature': signatures.join(' '),
  };
}
