import { WebhookSender } from '../../src/webhooks/sender.js';
import { webhookHeaders } from '../../src/webhooks/signing.js';

/**
 * Sends one signed delivery to each URL in turn, one after the other, with a sender of its own, and
 * prints the attempts as a JSON array (started by test/webhooks/sender.test.ts). A process of its
 * own because the CA it must trust, a test's self-signed certificate, can only be given to Node at
 * start-up (NODE_EXTRA_CA_CERTS). Arguments: the signing secret, then the URLs.
 */
const [secret, ...urls] = process.argv.slice(2);
if (secret === undefined || urls.length === 0) throw new Error('usage: tls-sender SECRET URL...');
const sender = new WebhookSender({ timeoutMs: 10_000, allowPrivate: true });
const attempts = [];
for (const [i, url] of urls.entries()) {
  const id = `evt_tls_${i + 1}`;
  const body = JSON.stringify({ id, type: 'stock.changed', data: { petId: '1', quantity: i } });
  attempts.push(await sender.send(url, { id, body, headers: webhookHeaders({ id, body }, [secret], new Date()) }));
}
sender.close();
process.stdout.write(JSON.stringify(attempts));
