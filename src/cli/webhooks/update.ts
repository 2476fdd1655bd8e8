import { MAX_IN_FLIGHT_MAX } from '../../domain/webhook.js';
import { parseCommandArgs, printHelp, type Command } from '../command.js';
import { CliError, EXIT_USAGE } from '../io.js';
import { withExistingStore } from '../store-access.js';
import { endpointIdArgument, HELP_OPTION, maxInFlightOption, noEndpoint } from './arguments.js';

const UPDATE_HELP = `Usage: petstore-inventory webhooks update ID --max-in-flight N [--json]

Changes how many requests are open to the endpoint at once, 1 to ${MAX_IN_FLIGHT_MAX}: the events of one pet
always go in seq order, one at a time; different pets' go at once up to N. With 1, every event
goes in seq order, one at a time (what endpoints added before this setting existed keep).

Options:
  --max-in-flight N  requests open at once, 1 to ${MAX_IN_FLIGHT_MAX}
  --json             print one JSON object: id, maxInFlight
  -h, --help         show this help
`;

/** webhooks update ID --max-in-flight N. */
export const updateCommand: Command = {
  summary: 'change how many requests are open to an endpoint at once',
  async run(args, io) {
    const { values, positionals } = parseCommandArgs({
      args,
      options: { 'max-in-flight': { type: 'string' }, json: { type: 'boolean' }, help: HELP_OPTION },
      strict: true,
      allowPositionals: true,
    });
    if (values.help) return printHelp(io, UPDATE_HELP);
    const id = endpointIdArgument('update', positionals);
    const raw = values['max-in-flight'];
    if (raw === undefined) throw new CliError('webhooks update needs --max-in-flight N (nothing else can be changed yet)', EXIT_USAGE);
    const maxInFlight = maxInFlightOption(raw);
    const endpoint = await withExistingStore(io, ['webhookEndpoints'], ({ webhookEndpoints }) => webhookEndpoints.updateEndpoint(id, { maxInFlight }));
    if (!endpoint) throw noEndpoint(id);
    if (values.json) io.stdout(`${JSON.stringify({ id: endpoint.id, maxInFlight: endpoint.maxInFlight })}\n`);
    else io.stdout(`Webhook endpoint ${id} now gets up to ${endpoint.maxInFlight} request${endpoint.maxInFlight === 1 ? '' : 's'} at once${endpoint.maxInFlight === 1 ? ', every event in seq order' : ', each pet\'s events in seq order'}.\n`);
    return 0;
  },
};
