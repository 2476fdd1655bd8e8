import { randomUUID } from 'node:crypto';
import type { ChangeOrigin } from '../domain/inventory.js';
import { parseReservationCursor, RESERVATION_STATUSES, reservationPageOf, type Reservation, type ReservationStatus } from '../domain/reservation.js';
import { RESERVATION_ID, reservationJson } from '../operations/reservation-parts.js';
import { commandGroup, parseCommandArgs, printHelp, type Command } from './command.js';
import { CliError, EXIT_USAGE } from './io.js';
import { withExistingStore } from './store-access.js';
import { formatTable, formatTime } from './table.js';

const HELP_OPTION = { type: 'boolean', short: 'h' } as const;
const LIMIT_MAX = 500;
const LIMIT_DEFAULT = 100;

const LIST_HELP = `Usage: petstore-inventory reservations list [--status STATUS] [--limit N] [--cursor CURSOR] [--json]

Lists reservations, newest first: id, status as it stands now (an active one past its expiry
is expired), the pets and quantities held, the shop's reference and when it expires.

Options:
  --status STATUS  only reservations in this status: ${RESERVATION_STATUSES.join(', ')}
  --limit N        show at most N reservations, 1 to ${LIMIT_MAX} (default ${LIMIT_DEFAULT})
  --cursor CURSOR  show the reservations older than a page: that page's nextCursor, from --json
                   or from the API
  --json           print what GET /v1/reservations answers:
                   {"items": [...], "nextCursor": ...}, nextCursor null on the last page
  -h, --help       show this help
`;

const SHOW_HELP = `Usage: petstore-inventory reservations show ID

Prints one reservation as JSON, as GET /v1/reservations/{id} answers it.

Options:
  -h, --help  show this help
`;

const RELEASE_HELP = `Usage: petstore-inventory reservations release ID

Gives back what an active reservation holds, as POST /v1/reservations/{id}/release does: its
stock is available again at once, and a reservation.released event says so. Releasing one
already released changes nothing and succeeds; one committed or expired cannot be released
(exit 1). Prints the reservation as JSON.

Options:
  -h, --help  show this help
`;

const listCommand: Command = {
  summary: 'list reservations, newest first',
  async run(args, io) {
    const { values } = parseCommandArgs({
      args,
      options: { status: { type: 'string' }, limit: { type: 'string' }, cursor: { type: 'string' }, json: { type: 'boolean' }, help: HELP_OPTION },
      strict: true,
    });
    if (values.help) return printHelp(io, LIST_HELP);
    const status = values.status === undefined ? undefined : parseStatus(values.status);
    const limit = values.limit === undefined ? LIMIT_DEFAULT : /^[1-9][0-9]*$/.test(values.limit) ? Number(values.limit) : NaN;
    if (!(limit >= 1 && limit <= LIMIT_MAX)) throw new CliError(`--limit must be a whole number from 1 to ${LIMIT_MAX} (got ${JSON.stringify(values.limit)})`, EXIT_USAGE);
    const before = values.cursor === undefined ? undefined : parseCursor(values.cursor);
    // One more than shown tells whether an older page follows, as the API does.
    const rows = await withExistingStore(io, ['reservations'], ({ reservations }) => reservations.list({ status, limit: limit + 1, before }));
    const { reservations: page, nextCursor } = reservationPageOf(rows, limit);
    if (values.json) io.stdout(`{"items":[${page.map(reservationJson).join(',')}],"nextCursor":${JSON.stringify(nextCursor)}}\n`);
    else if (page.length === 0) io.stdout(noneListed(status, before !== undefined));
    else io.stdout(formatReservations(page) + (nextCursor === null ? '' : `Older reservations: --cursor ${nextCursor}\n`));
    return 0;
  },
};

const showCommand: Command = {
  summary: 'print one reservation',
  async run(args, io) {
    const { values, positionals } = parseCommandArgs({ args, options: { help: HELP_OPTION }, strict: true, allowPositionals: true });
    if (values.help) return printHelp(io, SHOW_HELP);
    const id = reservationIdArgument('reservations show', positionals);
    const found = await withExistingStore(io, ['reservations'], ({ reservations }) => reservations.get(id));
    if (!found) throw new CliError(`no reservation has the id ${id}`);
    io.stdout(`${reservationJson(found)}\n`);
    return 0;
  },
};

const releaseCommand: Command = {
  summary: 'give back what an active reservation holds',
  async run(args, io) {
    const { values, positionals } = parseCommandArgs({ args, options: { help: HELP_OPTION }, strict: true, allowPositionals: true });
    if (values.help) return printHelp(io, RELEASE_HELP);
    const id = reservationIdArgument('reservations release', positionals);
    const outcome = await withExistingStore(io, ['reservations'], ({ reservations }) => reservations.end(id, 'release', releaseOrigin(new Date())));
    switch (outcome.kind) {
      case 'not_found':
        throw new CliError(`no reservation has the id ${id}`);
      case 'not_active':
        throw new CliError(`reservation ${id} is ${outcome.reservation.status}, so it cannot be released; nothing was changed`);
      case 'already':
      case 'ended':
        io.stdout(`${reservationJson(outcome.reservation)}\n`);
        io.stderr(outcome.kind === 'ended' ? `Released ${id}.\n` : `${id} was already released; nothing was changed.\n`);
        return 0;
    }
  },
};

export const reservationsCommand: Command = commandGroup({
  name: 'reservations',
  summary: 'list, show and release reservations of stock',
  description: 'Lists, shows and releases reservations: stock held for a checkout (docs/decisions.md, 12).',
  commands: { list: listCommand, show: showCommand, release: releaseCommand },
});

/**
 * Who a release from the CLI is: its event has source cli and no key nor request id, as a CLI
 * adjustment's (decisions 5.11); a key id no API key can have (theirs are key_ and hex).
 */
function releaseOrigin(at: Date): ChangeOrigin {
  return { source: 'cli', keyId: 'cli:reservations', keyName: 'reservations', requestId: `release-${randomUUID()}`, at };
}

function parseCursor(cursor: string): bigint {
  const place = parseReservationCursor(cursor);
  if (place === undefined) throw new CliError(`--cursor must be the nextCursor of a page, unchanged (got ${JSON.stringify(cursor.slice(0, 64))})`, EXIT_USAGE);
  return place;
}

function parseStatus(text: string): ReservationStatus {
  if ((RESERVATION_STATUSES as readonly string[]).includes(text)) return text as ReservationStatus;
  throw new CliError(`--status must be one of ${RESERVATION_STATUSES.join(', ')} (got ${JSON.stringify(text.slice(0, 40))})`, EXIT_USAGE);
}

/** The one reservation id a command takes: res_ and 24 hex digits, as the API's paths take it. */
function reservationIdArgument(command: string, positionals: readonly string[]): string {
  const [id] = positionals;
  if (id === undefined || positionals.length > 1) throw new CliError(`${command} takes exactly one reservation ID`, EXIT_USAGE);
  if (!RESERVATION_ID.test(id)) throw new CliError(`a reservation ID is res_ and 24 hex digits (got ${JSON.stringify(id.slice(0, 60))})`, EXIT_USAGE);
  return id;
}

function noneListed(status: ReservationStatus | undefined, paged: boolean): string {
  const which = status === undefined ? 'reservations' : `${status} reservations`;
  if (paged) return `No ${which} before that cursor.\n`;
  return status === undefined ? 'No reservations yet.\n' : `No ${which}.\n`;
}

function formatReservations(rows: readonly Reservation[]): string {
  return formatTable(
    ['ID', 'STATUS', 'ITEMS', 'REFERENCE', 'EXPIRES'],
    rows.map((r) => [r.id, r.status, r.items.map((i) => `${i.petId}x${i.quantity}`).join(','), r.reference ?? '-', formatTime(r.expiresAt)]),
  );
}
