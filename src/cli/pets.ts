import { readFile, stat } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { stringifyJson } from '../json.js';
import { INT64_MAX, INT64_MIN } from '../domain/pet-id.js';
import type { InventoryItem } from '../schemas/inventory.js';
import { PET_STATUSES, QUANTITY_MAX, QUANTITY_MIN } from '../schemas/values.js';
import { DuplicatePetError } from '../store/store.js';
import {
  CSV_HEADER,
  describeLocation,
  formatImportError,
  IMPORT_FORMATS,
  importFormatFromPath,
  invalidValueMessage,
  ITEM_FIELDS,
  MAX_IMPORT_BYTES,
  MAX_IMPORT_ERRORS,
  parseImportFile,
  quoteForMessage,
  type Field,
  type ImportEntry,
  type ImportFormat,
} from './import-file.js';
import { CliError, EXIT_USAGE } from './io.js';
import { commandGroup, printHelp, type Command } from './command.js';
import { exportCommand } from './export.js';
import { historyCommand } from './history.js';
import { removeCommand } from './remove.js';
import { withStore } from './store-access.js';

const HELP_OPTION = { type: 'boolean', short: 'h' } as const;
const MIB = 1024 * 1024;

const ADD_HELP = `Usage: petstore-inventory pets add --pet-id ID --status STATUS [--quantity N]

Creates the inventory entry of one pet in the store DATABASE_URL names. The entry's status is
set here and never changed by the API; PATCH /v1/inventory/{petId} then sets its quantity.
A pet whose entry was retired ("pets remove") gets it back, with this quantity and status.
Prints the new entry as JSON.

Options:
  --pet-id ID      the pet's id, required: an int64 from ${INT64_MIN} to ${INT64_MAX},
                   no leading zeros or plus sign; write a negative one as --pet-id=-5
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

const IMPORT_HELP = `Usage: petstore-inventory pets import FILE [--format csv|json]

Creates inventory entries from a file, all or nothing: the whole file is checked first, and
any problem (the first ${MAX_IMPORT_ERRORS} are listed, each with its line) or a petId that already
has an entry imports nothing. Files up to ${MAX_IMPORT_BYTES / MIB} MiB of UTF-8 text.

  CSV   the header ${CSV_HEADER}, then one entry per line:
          ${CSV_HEADER}
          9007199254740993,12,available
  JSON  an array of objects with exactly these fields, petId and quantity as JSON integers:
          [{"petId": 9007199254740993, "quantity": 12, "status": "available"}]

  petId     int64 from ${INT64_MIN} to ${INT64_MAX}, no leading zeros or
            plus sign; each petId at most once in a file
  quantity  integer from ${QUANTITY_MIN} to ${QUANTITY_MAX}
  status    ${PET_STATUSES.join(', ')}

Options:
  --format FORMAT  csv or json (default: from the file's extension, .csv or .json)
  -h, --help       show this help
`;

const addCommand: Command = {
  summary: "create one pet's inventory entry",
  async run(args, io) {
    const { values } = parseArgs({
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
    await withStore(io, async (store) => {
      try {
        await store.addItems([item]);
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
    const { values } = parseArgs({ args, options: { json: { type: 'boolean' }, help: HELP_OPTION }, strict: true });
    if (values.help) return printHelp(io, LIST_HELP);
    const items = await withStore(io, (store) => store.listInventory());
    if (values.json) io.stdout(`${stringifyJson(items)}\n`);
    else if (items.length === 0) io.stdout('No inventory entries yet. Create them with "pets add" or "pets import FILE".\n');
    else io.stdout(formatItems(items));
    return 0;
  },
};

const importCommand: Command = {
  summary: 'create entries from a CSV or JSON file, all or nothing',
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      options: { format: { type: 'string' }, help: HELP_OPTION },
      strict: true,
      allowPositionals: true,
    });
    if (values.help) return printHelp(io, IMPORT_HELP);
    const [file] = positionals;
    if (file === undefined || positionals.length > 1) throw new CliError('pets import takes exactly one FILE', EXIT_USAGE);
    const format = importFormat(file, values.format);
    const result = parseImportFile(await readImportFile(file), format);
    if (!result.ok) {
      for (const error of result.errors) io.stderr(`${formatImportError(error)}\n`);
      const n = result.errors.length;
      const count = result.truncated
        ? `more than ${MAX_IMPORT_ERRORS} problems (the first ${MAX_IMPORT_ERRORS} are listed above)`
        : `${n} ${n === 1 ? 'problem' : 'problems'} (listed above)`;
      throw new CliError(`${file}: ${count}; nothing was imported`);
    }
    if (result.entries.length === 0) throw new CliError(`${file}: nothing to import (the file holds no entries)`);
    await withStore(io, async (store) => {
      try {
        await store.addItems(result.entries.map((e) => e.item));
      } catch (err) {
        if (err instanceof DuplicatePetError) throw new CliError(alreadyThere(file, err.petId, result.entries));
        throw err;
      }
    });
    const n = result.entries.length;
    io.stdout(`imported ${n} ${n === 1 ? 'entry' : 'entries'}\n`);
    return 0;
  },
};

export const petsCommand: Command = commandGroup({
  name: 'petstore-inventory pets',
  summary: 'create, list, import, export and retire inventory entries; show their history',
  description: 'Creates, lists and retires inventory entries (the API only changes their quantity).',
  commands: { add: addCommand, list: listCommand, import: importCommand, export: exportCommand, remove: removeCommand, history: historyCommand },
});

/** An option checked by the same rule as the field in an import file. */
function parseOption<K extends Field>(field: K, option: string, text: string): InventoryItem[K] {
  const { rule, parse } = ITEM_FIELDS[field];
  const value = parse(text);
  if (value === undefined) throw new CliError(invalidValueMessage(option, rule, quoteForMessage(text)), EXIT_USAGE);
  return value;
}

function importFormat(file: string, option: string | undefined): ImportFormat {
  if (option === undefined) {
    const fromName = importFormatFromPath(file);
    if (!fromName) throw new CliError(`cannot tell the format of ${file} from its name: pass --format csv or --format json`, EXIT_USAGE);
    return fromName;
  }
  if (!(IMPORT_FORMATS as readonly string[]).includes(option)) {
    throw new CliError(`--format must be one of ${IMPORT_FORMATS.join(', ')} (got ${JSON.stringify(option)})`, EXIT_USAGE);
  }
  return option as ImportFormat;
}

/** The file's text; refuses files over MAX_IMPORT_BYTES before reading them, and text that is not UTF-8. */
async function readImportFile(file: string): Promise<string> {
  let bytes: Buffer;
  try {
    const { size } = await stat(file);
    if (size > MAX_IMPORT_BYTES) {
      throw new CliError(`${file} is ${(size / MIB).toFixed(1)} MiB; pets import takes files up to ${MAX_IMPORT_BYTES / MIB} MiB: split it`);
    }
    bytes = await readFile(file);
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`cannot read ${file}: ${READ_ERRORS[(err as { code?: string }).code ?? ''] ?? (err as Error).message}`);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new CliError(`${file} is not UTF-8 text`);
  }
}

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EISDIR: 'it is a directory',
  EACCES: 'permission denied',
};

function alreadyThere(file: string, petId: bigint, entries: readonly ImportEntry[]): string {
  const entry = entries.find((e) => e.item.petId === petId);
  const where = entry ? `${file} ${describeLocation(entry)}` : file;
  return `${where}: pet ${petId} already has an inventory entry; nothing was imported`;
}

/** petId and quantity right-aligned, status last. */
function formatItems(items: readonly InventoryItem[]): string {
  const idWidth = Math.max('PET ID'.length, ...items.map((i) => i.petId.toString().length));
  const qtyWidth = Math.max('QUANTITY'.length, String(QUANTITY_MAX).length);
  const line = (id: string, qty: string, status: string) => `${id.padStart(idWidth)}  ${qty.padStart(qtyWidth)}  ${status}\n`;
  return line('PET ID', 'QUANTITY', 'STATUS') + items.map((i) => line(i.petId.toString(), String(i.quantity), i.status)).join('');
}
