import { stringifyJson } from '../json.js';
import { parseCommandArgs, petIdArgument, printHelp, type Command } from './command.js';
import { CliError } from './io.js';
import { withExistingStore } from './store-access.js';

const REMOVE_HELP = `Usage: petstore-inventory pets remove ID [--force]

Retires the inventory entry of a pet the store no longer stocks. Afterwards the entry is in no
list or export, and GET or PATCH /v1/inventory/{petId} answer 404 not_found; its change history
stays readable ("pets history ID", GET /v1/inventory/{petId}/history). "pets add" or
"pets import" of the same petId later revives it, with the quantity and status they give.
Prints the entry as it was, as JSON.

Options:
  --force     retire it even though its quantity is above 0 (the count is kept with the entry)
  -h, --help  show this help
`;

export const removeCommand: Command = {
  summary: 'retire an entry the store no longer stocks',
  async run(args, io) {
    const { values, positionals } = parseCommandArgs({
      args,
      options: { force: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    });
    if (values.help) return printHelp(io, REMOVE_HELP);
    const petId = petIdArgument('pets remove', positionals);
    const outcome = await withExistingStore(io, ['changes'], ({ changes }) => changes.retireEntry(petId, { force: values.force ?? false, at: new Date() }));
    switch (outcome.kind) {
      case 'not_found':
        throw new CliError(`pet ${petId} has no inventory entry`);
      case 'in_stock':
        throw new CliError(`pet ${petId} still has ${outcome.item.quantity} in stock; nothing was changed (--force retires it anyway)`);
      case 'retired':
        io.stdout(`${stringifyJson(outcome.item)}\n`);
        io.stderr(`Retired pet ${petId}; its history stays readable with "pets history ${petId}".\n`);
        return 0;
    }
  },
};
