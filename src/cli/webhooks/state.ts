import { backlogOf, DISABLED_BY_OPERATOR, PREVIOUS_SECRET_MS, type WebhookEndpoint } from '../../domain/webhook.js';
import type { Events, WebhookEndpoints } from '../../store/store.js';
import { newWebhookSecret } from '../../webhooks/secret.js';
import { parseCommandArgs, printHelp, type Command } from '../command.js';
import { CliError, EXIT_USAGE } from '../io.js';
import { withExistingStore } from '../store-access.js';
import { formatTime } from '../table.js';
import { endpointIdArgument, HELP_OPTION, noEndpoint } from './arguments.js';

const REMOVE_HELP = `Usage: petstore-inventory webhooks remove ID

Removes the webhook endpoint with this id and its delivery log: nothing more is sent to it.

Options:
  -h, --help  show this help
`;

const DISABLE_HELP = `Usage: petstore-inventory webhooks disable ID

Stops delivering to the endpoint. It keeps its place: "webhooks enable" resumes from the first
event it did not get, however long it was off (within the event retention).

Options:
  -h, --help  show this help
`;

const ENABLE_HELP = `Usage: petstore-inventory webhooks enable ID

Delivers to the endpoint again, at once, from the first event it did not get: after it was
disabled (by an operator, a 410 Gone, or every retry failed), or to retry now an endpoint
waiting between retries. Its count of failures starts again.

Options:
  -h, --help  show this help
`;

const REPLAY_HELP = `Usage: petstore-inventory webhooks replay ID --from SEQ

Delivers again, in order (per pet, or every event with --max-in-flight 1), every event from seq SEQ on that the event log still holds (see
"petstore-inventory webhooks deliveries ID" and "events tail" for the seqs): for a receiver that
lost what it had been sent. Each event keeps its webhook-id, so a receiver that drops repeats must
forget those first. An endpoint behind the event retention gets webhook.reset instead. A disabled
endpoint is replayed once it is enabled.

Options:
  --from SEQ  the first seq to deliver again (a whole number from 1)
  -h, --help  show this help
`;

const ROTATE_HELP = `Usage: petstore-inventory webhooks rotate-secret ID [--json]

Gives the endpoint a new signing secret and prints it (shown only this once). For 24 hours every
delivery carries two signatures, with the new secret and with the old one, so the receiver can
switch to the new secret at any time within them.

Options:
  --json      print one JSON object: id, secret, previousSecretUntil
  -h, --help  show this help
`;

/** The positional id of a command that takes only it (and --help); undefined after printing the help. */
function idOnly(command: string, args: string[], help: string, io: Parameters<Command['run']>[1]): string | undefined {
  const { values, positionals } = parseCommandArgs({ args, options: { help: HELP_OPTION }, strict: true, allowPositionals: true });
  if (values.help) {
    printHelp(io, help);
    return undefined;
  }
  return endpointIdArgument(command, positionals);
}

/** webhooks remove ID. */
export const removeCommand: Command = {
  summary: 'remove an endpoint and its delivery log',
  async run(args, io) {
    const id = idOnly('remove', args, REMOVE_HELP, io);
    if (id === undefined) return 0;
    await withExistingStore(io, ['webhookEndpoints'], async ({ webhookEndpoints }) => {
      if (!(await webhookEndpoints.removeEndpoint(id))) throw noEndpoint(id);
    });
    io.stdout(`Removed webhook endpoint ${id} and its delivery log.\n`);
    return 0;
  },
};

/** webhooks disable ID: stops delivery, keeping the endpoint's place. */
export const disableCommand: Command = {
  summary: 'stop delivering to an endpoint (it keeps its place)',
  async run(args, io) {
    const id = idOnly('disable', args, DISABLE_HELP, io);
    if (id === undefined) return 0;
    const message = await withExistingStore(io, ['webhookEndpoints'], async ({ webhookEndpoints }) => {
      const endpoint = await webhookEndpoints.getEndpoint(id);
      if (!endpoint) throw noEndpoint(id);
      // Already off: its reason (a 410, retries used up) says more than "by an operator" would.
      if (!endpoint.enabled) return `Webhook endpoint ${id} is already disabled: ${endpoint.disabledReason ?? 'no reason recorded'}.\n`;
      if (!(await webhookEndpoints.disableEndpoint(id, DISABLED_BY_OPERATOR))) throw noEndpoint(id);
      return `Disabled webhook endpoint ${id}: delivered up to seq ${endpoint.deliveredSeq}; "webhooks enable ${id}" resumes from there.\n`;
    });
    io.stdout(message);
    return 0;
  },
};

/** The endpoint as an operator's change left it, with its backlog: what enable and replay report. */
async function standing(
  store: { webhookEndpoints: Pick<WebhookEndpoints, 'getEndpoint'>; events: Pick<Events, 'head'> },
  id: string,
): Promise<{ endpoint: WebhookEndpoint; backlog: number; events: string }> {
  const endpoint = await store.webhookEndpoints.getEndpoint(id);
  if (!endpoint) throw noEndpoint(id);
  const backlog = backlogOf(await store.events.head(), endpoint);
  return { endpoint, backlog, events: `${backlog} event${backlog === 1 ? '' : 's'}` };
}

/** webhooks enable ID: resumes from the first event not delivered. */
export const enableCommand: Command = {
  summary: 'deliver to an endpoint again, from the first event it did not get',
  async run(args, io) {
    const id = idOnly('enable', args, ENABLE_HELP, io);
    if (id === undefined) return 0;
    const { endpoint, events } = await withExistingStore(io, ['webhookEndpoints', 'events'], async (store) => {
      if (!(await store.webhookEndpoints.enableEndpoint(id))) throw noEndpoint(id);
      return standing(store, id);
    });
    io.stdout(`Enabled webhook endpoint ${id}: delivery resumes after seq ${endpoint.deliveredSeq} (${events} waiting).\n`);
    return 0;
  },
};

/** webhooks replay ID --from SEQ: moves the endpoint back to just before SEQ. */
export const replayCommand: Command = {
  summary: 'deliver again every event from a seq on',
  async run(args, io) {
    const { values, positionals } = parseCommandArgs({ args, options: { from: { type: 'string' }, help: HELP_OPTION }, strict: true, allowPositionals: true });
    if (values.help) return printHelp(io, REPLAY_HELP);
    const id = endpointIdArgument('replay', positionals);
    const from = values.from === undefined || !/^[1-9]\d{0,15}$/.test(values.from) ? NaN : Number(values.from);
    if (!Number.isSafeInteger(from)) throw new CliError('webhooks replay needs --from SEQ, a whole number from 1', EXIT_USAGE);
    const { endpoint, events } = await withExistingStore(io, ['webhookEndpoints', 'events'], async (store) => {
      // Past the head it would pass over the events committed until then, unsent.
      const head = await store.events.head();
      if (from > head + 1) throw new CliError(`--from ${from} is past the newest event, seq ${head}: nothing there to deliver again`, EXIT_USAGE);
      if (!(await store.webhookEndpoints.replayFrom(id, from - 1))) throw noEndpoint(id);
      return standing(store, id);
    });
    const when = endpoint.enabled ? 'now' : `once it is enabled ("petstore-inventory webhooks enable ${id}")`;
    io.stdout(`Webhook endpoint ${id} gets every event from seq ${from} on again, ${when}: ${events} to deliver.\n`);
    return 0;
  },
};

/** webhooks rotate-secret ID: a new secret, the old one signing beside it for a day. */
export const rotateSecretCommand: Command = {
  summary: 'replace the signing secret (the old one also signs for 24 hours)',
  async run(args, io) {
    const { values, positionals } = parseCommandArgs({ args, options: { json: { type: 'boolean' }, help: HELP_OPTION }, strict: true, allowPositionals: true });
    if (values.help) return printHelp(io, ROTATE_HELP);
    const id = endpointIdArgument('rotate-secret', positionals);
    const until = new Date(Date.now() + PREVIOUS_SECRET_MS);
    const endpoint = await withExistingStore(io, ['webhookEndpoints'], ({ webhookEndpoints }) => webhookEndpoints.rotateSecret(id, newWebhookSecret(), until));
    if (!endpoint) throw noEndpoint(id);
    if (values.json) {
      io.stdout(`${JSON.stringify({ id: endpoint.id, secret: endpoint.secret, previousSecretUntil: until.toISOString() })}\n`);
    } else {
      io.stdout(
        `New signing secret of webhook endpoint ${id}: ${endpoint.secret}\n` +
          `Until ${formatTime(until)} every delivery is signed with it and with the previous one.\n` +
          'The secret will not be shown again: store it now.\n',
      );
    }
    return 0;
  },
};
