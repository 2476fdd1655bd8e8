import { historyItem, historyPageOf, parseHistoryCursor } from '../domain/history.js';
import { stringifyJson } from '../json.js';
import type { HistoryEntry } from '../domain/history.js';
import { parseCommandArgs, petIdArgument, printHelp, type Command } from './command.js';
import { CliError, EXIT_USAGE } from './io.js';
import { withExistingStore } from './store-access.js';
import { formatTable } from './table.js';

const LIMIT_MAX = 10_000;

const HISTORY_HELP = `Usage: petstore-inventory pets history ID [--limit N] [--cursor CURSOR] [--json]

Shows the changes of one pet's quantity, newest first: when, from and to which quantity, by
which API key (id and name), the request id and the reason sent with the change.

Options:
  --limit N        show at most N changes, 1 to ${LIMIT_MAX} (default 50)
  --cursor CURSOR  show the changes older than a page: that page's nextCursor, from --json
                   or from the API
  --json           print what GET /v1/inventory/{petId}/history answers:
                   {"items": [...], "nextCursor": ...}, nextCursor null on the last page
  -h, --help       show this help
`;

export const historyCommand: Command = {
  summary: "show the change history of one pet's quantity",
  async run(args, io) {
    const { values, positionals } = parseCommandArgs({
      args,
      options: { limit: { type: 'string' }, cursor: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    });
    if (values.help) return printHelp(io, HISTORY_HELP);
    const petId = petIdArgument('pets history', positionals);
    const limit = values.limit === undefined ? 50 : /^[1-9][0-9]*$/.test(values.limit) ? Number(values.limit) : NaN;
    if (!(limit >= 1 && limit <= LIMIT_MAX)) throw new CliError(`--limit must be a whole number from 1 to ${LIMIT_MAX} (got ${JSON.stringify(values.limit)})`, EXIT_USAGE);
    const before = values.cursor === undefined ? undefined : parseCursor(values.cursor);
    // One row more than shown tells whether an older page follows, as the API does.
    const rows = await withExistingStore(io, ['history'], ({ history }) => history.listHistory(petId, { limit: limit + 1, ...(before !== undefined && { before }) }));
    if (!rows) throw new CliError(`pet ${petId} has no inventory entry`);
    const { rows: page, nextCursor } = historyPageOf(rows, limit);
    if (values.json) io.stdout(`${stringifyJson({ items: page.map(historyItem), nextCursor })}\n`);
    else if (page.length === 0) io.stdout(before === undefined ? `No changes of pet ${petId} yet.\n` : `No changes of pet ${petId} before that cursor.\n`);
    else io.stdout(formatHistory(page) + (nextCursor === null ? '' : `Older changes: --cursor ${nextCursor}\n`));
    return 0;
  },
};

function parseCursor(cursor: string): bigint {
  const rowId = parseHistoryCursor(cursor);
  if (rowId === undefined) throw new CliError(`--cursor must be the nextCursor of a page, unchanged (got ${JSON.stringify(cursor.slice(0, 64))})`, EXIT_USAGE);
  return rowId;
}

function formatHistory(rows: readonly HistoryEntry[]): string {
  return formatTable(
    ['AT', 'FROM', 'TO', 'REASON', 'KEY', 'REQUEST'],
    rows.map((r) => [r.at.toISOString(), String(r.previousQuantity), String(r.quantity), r.reason ?? '-', `${r.keyName} (${r.keyId})`, r.requestId]),
  );
}
