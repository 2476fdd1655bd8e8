import { failureText, type DeliveryAttempt } from '../../domain/webhook.js';
import { webhookList } from '../../operations/list-webhooks.js';
import type { WebhookEndpointBody } from '../../schemas/webhook.js';
import { parseCommandArgs, printHelp, type Command } from '../command.js';
import { CliError, EXIT_USAGE } from '../io.js';
import { withExistingStore } from '../store-access.js';
import { formatTable, formatTime } from '../table.js';
import { endpointIdArgument, HELP_OPTION, noEndpoint } from './arguments.js';
import { currentFailure } from './current-failure.js';

const DELIVERIES_DEFAULT = 20;
const DELIVERIES_MAX = 1000;

const LIST_HELP = `Usage: petstore-inventory webhooks list [--json]

Lists the webhook endpoints: id, URL, whether enabled (or why not, or how many events wait for a
retry), the requests open at once at most, the seq delivered up to, the backlog (events committed
and not yet delivered) and the last failure, while no attempt has succeeded since it. Never a
signing secret.

Options:
  --json      print what GET /v1/webhooks answers: {"items": [...], "head": N}; its lastFailure
              is kept after later deliveries (failures 0: the last attempt succeeded)
  -h, --help  show this help
`;

const DELIVERIES_HELP = `Usage: petstore-inventory webhooks deliveries ID [--limit N] [--json]

The endpoint's delivery log, newest first: each attempt's event id and seq, when it was made,
the receiver's status or the network error, and how long it took.

Options:
  --limit N   show at most N attempts, 1 to ${DELIVERIES_MAX} (default ${DELIVERIES_DEFAULT})
  --json      print a JSON array, with the first 1 KiB of each answer's body
  -h, --help  show this help
`;

/** webhooks list: every endpoint's state, as the API has it. */
export const listCommand: Command = {
  summary: 'list endpoints, what they were delivered and their backlog (never a secret)',
  async run(args, io) {
    const { values } = parseCommandArgs({ args, options: { json: { type: 'boolean' }, help: HELP_OPTION }, strict: true });
    if (values.help) return printHelp(io, LIST_HELP);
    const { list, newest } = await withExistingStore(io, ['webhookEndpoints', 'events'], async (ports) => {
      const list = await webhookList(ports);
      // The table tells a failure that still holds from one a later success put behind: the newest attempt of each that failed once.
      const newest = values.json
        ? new Map<string, DeliveryAttempt | undefined>()
        : new Map(await Promise.all(list.items.filter((e) => e.lastFailure !== null).map(async (e) => [e.id, (await ports.webhookEndpoints.listDeliveries(e.id, 1))[0]] as const)));
      return { list, newest };
    });
    if (values.json) {
      io.stdout(`${JSON.stringify(list)}\n`);
    } else if (list.items.length === 0) {
      io.stdout('No webhook endpoints yet. Add one with: petstore-inventory webhooks add --url URL\n');
    } else {
      io.stdout(
        formatTable(['ID', 'URL', 'STATE', 'IN FLIGHT', 'DELIVERED', 'BACKLOG', 'LAST FAILURE'], list.items.map((e) => endpointRow(e, newest.get(e.id)))),
      );
    }
    return 0;
  },
};

function endpointRow(e: WebhookEndpointBody, newest: DeliveryAttempt | undefined): string[] {
  const retrying = `retrying ${e.retrying} event${e.retrying === 1 ? '' : 's'} (${e.failures} failed)`;
  const state = e.enabled ? (e.retrying > 0 ? retrying : 'enabled') : `disabled: ${(e.disabledReason ?? 'no reason recorded').replace(/^disabled /, '')}`;
  const current = currentFailure(e, newest);
  const failure = current === null ? '-' : `${current.at === null ? '' : `${formatTime(current.at)} `}${current.text}`;
  return [e.id, e.url, state, `at most ${e.maxInFlight}`, String(e.deliveredSeq), String(e.backlog), failure];
}

/** webhooks deliveries ID: the delivery log, newest first. */
export const deliveriesCommand: Command = {
  summary: "an endpoint's delivery log: each attempt's event, time, status or error, duration",
  async run(args, io) {
    const { values, positionals } = parseCommandArgs({
      args,
      options: { limit: { type: 'string' }, json: { type: 'boolean' }, help: HELP_OPTION },
      strict: true,
      allowPositionals: true,
    });
    if (values.help) return printHelp(io, DELIVERIES_HELP);
    const id = endpointIdArgument('deliveries', positionals);
    const limit = values.limit === undefined ? DELIVERIES_DEFAULT : /^[1-9][0-9]*$/.test(values.limit) ? Number(values.limit) : NaN;
    if (!(limit >= 1 && limit <= DELIVERIES_MAX)) {
      throw new CliError(`--limit must be a whole number from 1 to ${DELIVERIES_MAX} (got ${JSON.stringify(values.limit)})`, EXIT_USAGE);
    }
    const attempts = await withExistingStore(io, ['webhookEndpoints'], async ({ webhookEndpoints }) => {
      if (!(await webhookEndpoints.getEndpoint(id))) throw noEndpoint(id);
      return webhookEndpoints.listDeliveries(id, limit);
    });
    if (values.json) {
      io.stdout(`${JSON.stringify(attempts.map(attemptJson))}\n`);
    } else if (attempts.length === 0) {
      io.stdout(`No delivery attempts to ${id} yet.\n`);
    } else {
      io.stdout(formatTable(['AT', 'EVENT', 'SEQ', 'RESULT', 'DURATION'], attempts.map(attemptRow)));
    }
    return 0;
  },
};

/** Built field by field, as the API's endpoints are. */
function attemptJson(a: DeliveryAttempt) {
  return {
    eventId: a.eventId,
    seq: a.seq,
    attemptedAt: a.attemptedAt.toISOString(),
    status: a.status,
    error: a.error,
    durationMs: a.durationMs,
    responseBody: a.responseBody,
  };
}

function attemptRow(a: DeliveryAttempt): string[] {
  const result = failureText(a.status !== null ? { status: a.status } : { error: a.error ?? 'no answer' });
  // A receiver's error text could hold a line break: one attempt, one line.
  return [a.attemptedAt.toISOString(), a.eventId, String(a.seq), result.replace(/\p{Cc}+/gu, ' '), `${a.durationMs} ms`];
}
