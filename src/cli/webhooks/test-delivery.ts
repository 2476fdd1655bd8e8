import { randomBytes } from 'node:crypto';
import { failureText } from '../../domain/webhook.js';
import { attemptResult } from '../../webhooks/context.js';
import { attemptRecord, testMessage } from '../../webhooks/messages.js';
import { WebhookSender } from '../../webhooks/sender.js';
import { signingSecrets, webhookHeaders } from '../../webhooks/signing.js';
import { parseCommandArgs, printHelp, type Command } from '../command.js';
import { CliError } from '../io.js';
import { withExistingStore } from '../store-access.js';
import { endpointIdArgument, HELP_OPTION, noEndpoint } from './arguments.js';

const TEST_HELP = `Usage: petstore-inventory webhooks test ID

Sends the endpoint a webhook.test event at once, signed as every delivery is, and prints the
receiver's status (or the network error). The attempt goes to the delivery log; the endpoint's
place in the event log does not move. Exits 1 unless the receiver answered 2xx.

Options:
  -h, --help  show this help
`;

/** webhooks test ID: one signed webhook.test, sent now, outside the order. */
export const testCommand: Command = {
  summary: 'send a webhook.test event now and print the answer',
  async run(args, io) {
    const { values, positionals } = parseCommandArgs({ args, options: { help: HELP_OPTION }, strict: true, allowPositionals: true });
    if (values.help) return printHelp(io, TEST_HELP);
    const id = endpointIdArgument('test', positionals);
    const { attempt, url, outcome } = await withExistingStore(io, ['webhookEndpoints'], async ({ webhookEndpoints }, config) => {
      const endpoint = await webhookEndpoints.getEndpoint(id);
      if (!endpoint) throw noEndpoint(id);
      const now = new Date();
      const message = testMessage(endpoint.id, `evt_test_${randomBytes(12).toString('base64url')}`, now);
      const headers = webhookHeaders(message, signingSecrets(endpoint, now), now);
      const sender = new WebhookSender({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhooksAllowPrivate });
      let sent;
      try {
        sent = await sender.send(endpoint.url, { id: message.id, body: message.body, headers });
      } finally {
        sender.close();
      }
      const attempt = attemptRecord(endpoint.id, message, now, sent);
      await webhookEndpoints.recordAttempts([attempt]);
      return { attempt, url: endpoint.url, outcome: sent.outcome };
    });
    const line = `webhook.test ${attempt.eventId} to ${url}: ${failureText(outcome)} in ${attempt.durationMs} ms`;
    if (attemptResult(outcome) === 'delivered') {
      io.stdout(`${line}: delivered.\n`);
      return 0;
    }
    throw new CliError(`${line}: not delivered (see "petstore-inventory webhooks deliveries ${id}")`);
  },
};
