import { loadConfig } from '../../config.js';
import { newEndpointId, newWebhookSecret } from '../../webhooks/secret.js';
import { parseCommandArgs, printHelp, type Command } from '../command.js';
import { CliError, EXIT_USAGE } from '../io.js';
import { withStore } from '../store-access.js';
import { DEFAULT_MAX_IN_FLIGHT, MAX_IN_FLIGHT_MAX } from '../../domain/webhook.js';
import { HELP_OPTION, maxInFlightOption } from './arguments.js';
import { receiverUrl, URL_MAX } from './receiver-url.js';

const DESCRIPTION_MAX = 200;

const ADD_HELP = `Usage: petstore-inventory webhooks add --url URL [--description TEXT] [--max-in-flight N] [--json]

Adds a webhook endpoint to the store DATABASE_URL names: every event appended from now on is
POSTed to URL, signed (Standard Webhooks): the events of one pet in seq order, one at a time, and
different pets' at once, up to N requests open (--max-in-flight 1: every event in seq order). Prints the endpoint's id and its signing
secret; the secret is shown only this once, so give it to the receiver now.

Only https URLs whose host resolves to a public address are accepted; WEBHOOKS_ALLOW_PRIVATE=true
also accepts http and loopback, private and link-local addresses (receivers in the store's own
network), with a warning: the servers deliver to such a URL only if they run with
WEBHOOKS_ALLOW_PRIVATE=true too.

Options:
  --url URL           where the events go (required, at most ${URL_MAX} characters)
  --description TEXT  what or who receives them (at most ${DESCRIPTION_MAX} characters)
  --max-in-flight N   requests open at once, 1 to ${MAX_IN_FLIGHT_MAX} (default ${DEFAULT_MAX_IN_FLIGHT}); "webhooks update" changes it
  --json              print one JSON object: id, url, secret, enabled, maxInFlight
  -h, --help          show this help
`;

/** webhooks add: a new endpoint at the log's head, and its secret printed once. */
export const addCommand: Command = {
  summary: 'add an endpoint and print its signing secret (shown only once)',
  async run(args, io) {
    const { values } = parseCommandArgs({
      args,
      options: { url: { type: 'string' }, description: { type: 'string' }, 'max-in-flight': { type: 'string' }, json: { type: 'boolean' }, help: HELP_OPTION },
      strict: true,
    });
    if (values.help) return printHelp(io, ADD_HELP);
    const description = checkDescription(values.description);
    if (values.url === undefined) throw new CliError('webhooks add needs --url URL (where the events are POSTed)', EXIT_USAGE);
    const maxInFlight = values['max-in-flight'] === undefined ? DEFAULT_MAX_IN_FLIGHT : maxInFlightOption(values['max-in-flight']);
    const url = await receiverUrl(values.url, loadConfig(io.env).webhooksAllowPrivate, io);
    const endpoint = await withStore(io, ['webhookEndpoints'], ({ webhookEndpoints }) =>
      webhookEndpoints.addEndpoint({ id: newEndpointId(), url, description, secret: newWebhookSecret(), createdAt: new Date(), maxInFlight }),
    );
    if (values.json) {
      io.stdout(`${JSON.stringify({ id: endpoint.id, url: endpoint.url, secret: endpoint.secret, enabled: endpoint.enabled, maxInFlight: endpoint.maxInFlight })}\n`);
      io.stderr(`Added webhook endpoint ${endpoint.id}: it receives the events after seq ${endpoint.deliveredSeq}. The secret will not be shown again: store it now.\n`);
    } else {
      io.stdout(
        `Added webhook endpoint ${endpoint.id} for ${endpoint.url}: it receives the events after seq ${endpoint.deliveredSeq}, up to ${endpoint.maxInFlight} at once.\n` +
          `Signing secret: ${endpoint.secret}\n` +
          'The secret will not be shown again: store it now (webhooks rotate-secret makes a new one).\n',
      );
    }
    return 0;
  },
};

function checkDescription(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  const description = raw.trim();
  if (description === '') return null;
  if ([...description].length > DESCRIPTION_MAX) throw new CliError(`--description must be at most ${DESCRIPTION_MAX} characters`, EXIT_USAGE);
  // A line break or escape code would garble "webhooks list".
  if (/\p{Cc}/u.test(description)) throw new CliError('--description must not contain control characters', EXIT_USAGE);
  return description;
}
