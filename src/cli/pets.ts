import { stringifyJson } from '../json.js';
import { INT64_MAX, INT64_MIN } from '../domain/pet-id.js';
import type { InventoryItem } from '../schemas/inventory.js';
import { PET_STATUSES, QUANTITY_MAX, QUANTITY_MIN } from '../schemas/values.js';
import { DuplicatePetError } from '../store/store.js';
import { invalidValueMessage, ITEM_FIELDS, quoteForMessage, type Field } from './import/fields.js';
import { importCommand } from './import/command.js';
import { CliError, EXIT_USAGE } from './io.js';
import { commandGroup, parseCommandArgs, printHelp, type Command } from './command.js';
import { adjustCommand } from './adjust.js';
import { exportCommand } from './export.js';
import { historyCommand } from './history.js';
import { removeCommand } from './remove.js';
import { withExistingStore, withStore } from './store-access.js';

const HELP_OPTION = { type: 'boolean', short: 'h' } as const;

const ADD_HELP = `Usage: petstore-inventory pets add --pet-id ID --status STATUS [--quantity N]

Creates the inventory entry of one pet in the store DATABASE_URL names. The entry's status is
set here and never changed by the API; PATCH /v1/inventory/{petId} then sets its quantity.
A pet whose entry was retired ("pets remove") gets it back, with this quantity and status.
Prints the new entry as JSON.

Options:
  --pet-id ID      the pet's id, required: an int64 from ${INT64_MIN} to ${INT64_MAX},
                   no leading zeros or plus sign
  --status STATUS  required: ${PET_STATUSES.join(', ')}
  --quantity N     stock count from ${QUANTITY_MIN} to ${QUANTITY_MAX} (default ${QUANTITY_MIN})
  -h, --help       show this help
`;

const LIST_HELP = `Usage: petstore-inventory pets list [--json]

Lists every inventory entry (petId, quantity, status) in the store DATABASE_URL names,
ordered by petId.

Options:
  --json      print a JSON array, petIds as exact integers
  -h, --help  show this help
`;

const addCommand: Command = {
  summary: "create one pet's inventory entry",
  async run(args, io) {
    const { values } = parseCommandArgs({
      args,
      options: { 'pet-id': { type: 'string' }, status: { type: 'string' }, quantity: { type: 'string' }, help: HELP_OPTION },
      strict: true,
    });
    if (values.help) return printHelp(io, ADD_HELP);
    if (values['pet-id'] === undefined || values.status === undefined) {
      throw new CliError('pets add needs --pet-id ID and --status STATUS (see "petstore-inventory pets add --help")', EXIT_USAGE);
    }
    const item: InventoryItem = {
      petId: parseOption('petId', '--pet-id', values['pet-id']),
      quantity: parseOption('quantity', '--quantity', values.quantity ?? String(QUANTITY_MIN)),
      status: parseOption('status', '--status', values.status),
    };
    await withStore(io, ['changes'], async ({ changes }) => {
      try {
        await changes.addItems([item]);
      } catch (err) {
        if (err instanceof DuplicatePetError) throw new CliError(`pet ${err.petId} already has an inventory entry`);
        throw err;
      }
    });
    io.stdout(`${stringifyJson(item)}\n`);
    return 0;
  },
};

const listCommand: Command = {
  summary: 'list every inventory entry',
  async run(args, io) {
    const { values } = parseCommandArgs({ args, options: { json: { type: 'boolean' }, help: HELP_OPTION }, strict: true });
    if (values.help) return printHelp(io, LIST_HELP);
    const items = await withExistingStore(io, ['entries'], ({ entries }) => entries.listInventory());
    if (values.json) io.stdout(`${stringifyJson(items)}\n`);
    else if (items.length === 0) io.stdout('No inventory entries yet. Create them with "pets add" or "pets import FILE".\n');
    else io.stdout(formatItems(items));
    return 0;
  },
};

export const petsCommand: Command = commandGroup({
  name: 'pets',
  summary: 'create, list, adjust, import, export and retire inventory entries; show their history',
  description: 'Creates, lists, adjusts and retires inventory entries (the API only changes their quantity).',
  commands: { add: addCommand, list: listCommand, adjust: adjustCommand, import: importCommand, export: exportCommand, remove: removeCommand, history: historyCommand },
});

/** An option checked by the same rule as the field in an import file. */
function parseOption<K extends Field>(field: K, option: string, text: string): InventoryItem[K] {
  const { rule, parse } = ITEM_FIELDS[field];
  const value = parse(text);
  if (value === undefined) throw new CliError(invalidValueMessage(option, rule, quoteForMessage(text)), EXIT_USAGE);
  return value;
}

/** petId and quantity right-aligned, status last. */
function formatItems(items: readonly InventoryItem[]): string {
  const idWidth = Math.max('PET ID'.length, ...items.map((i) => i.petId.toString().length));
  const qtyWidth = Math.max('QUANTITY'.length, String(QUANTITY_MAX).length);
  const line = (id: string, qty: string, status: string) => `${id.padStart(idWidth)}  ${qty.padStart(qtyWidth)}  ${status}\n`;
  return line('PET ID', 'QUANTITY', 'STATUS') + items.map((i) => line(i.petId.toString(), String(i.quantity), i.status)).join('');
}
