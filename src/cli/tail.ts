import { once } from 'node:events';
import { eventJson, isReservationEvent, type InventoryEvent } from '../domain/event.js';
import { StoreUnavailableError } from '../errors.js';
import type { Events } from '../store/store.js';
import { parseCommandArgs, printHelp, type Command } from './command.js';
import { CliError, EXIT_USAGE, stopSignalOf, type CliIO } from './io.js';
import { withExistingStore } from './store-access.js';

/** Events read per page. */
const PAGE = 1000;
/**
 * How often the log is read when nothing said it grew: a server in another process appends
 * without telling this one (on SQLite; on PostgreSQL its NOTIFY wakes the tail sooner).
 */
export const TAIL_POLL_MS = 1000;

const TAIL_HELP = `Usage: petstore-inventory events tail [--after N] [--json]

Prints the change events of the store DATABASE_URL names as they are committed, oldest first:
every change of an entry's quantity or status, made through the API or this tool. Runs until
Ctrl-C (or SIGTERM), then exits 0. Where it starts and the notices go to stderr, events to stdout.

Options:
  --after N   start after event N (a seq: from the feed, its X-Events-Head or an earlier tail);
              default: the newest, so only what is committed from now on. When the events
              after N are no longer kept (EVENTS_RETENTION_DAYS), it says so and goes on
              from the newest; so it does when N is beyond the newest event (the
              store was rebuilt, or N is from another store).
  --json      one event per line, exactly as GET /v1/events sends it
  -h, --help  show this help
`;

export const tailCommand: Command = {
  summary: 'print the change events as they are committed, until Ctrl-C',
  async run(args, io) {
    const { values } = parseCommandArgs({
      args,
      options: { after: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    });
    if (values.help) return printHelp(io, TAIL_HELP);
    const after = values.after === undefined ? undefined : parseAfter(values.after);
    const format = values.json ? (e: InventoryEvent) => eventJson(e) : eventLine;
    const stop = stopSignalOf(io);
    try {
      await withExistingStore(io, ['events'], ({ events }) => tail(events, { after, format, io, signal: stop.signal }));
    } finally {
      stop.release();
    }
    return 0;
  },
};

function parseAfter(text: string): number {
  const n = /^(0|[1-9][0-9]{0,14})$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) throw new CliError(`--after must be an event's seq, a whole number from 0 (got ${JSON.stringify(text)})`, EXIT_USAGE);
  return n;
}

interface TailOptions {
  after: number | undefined;
  format: (event: InventoryEvent) => string;
  io: CliIO;
  signal: AbortSignal;
}

/**
 * Reads the log page by page after the last seq printed; once caught up, waits for the store to
 * say it appended (onAppended) or for the poll, whichever comes first. A store out of reach is
 * said once and tried again at the poll.
 */
async function tail(events: Pick<Events, 'readEvents' | 'head' | 'onAppended'>, { after, format, io, signal: stopped }: TailOptions): Promise<void> {
  // A reader that went away (EPIPE: "| head") ends the tail as Ctrl-C does.
  const readerGone = new AbortController();
  const signal = AbortSignal.any([stopped, readerGone.signal]);
  const onOutputError = () => readerGone.abort();
  io.stdoutStream?.on('error', onOutputError);
  let woken = false;
  let wake: (() => void) | undefined;
  const stopListening = events.onAppended(() => {
    woken = true;
    wake?.();
  });
  const write = output(io, signal);
  try {
    let last = after ?? (await events.head());
    io.stderr(`Following the change events after ${last}${after === undefined ? ' (the newest)' : ''}; Ctrl-C stops.\n`);
    let unavailable = false;
    while (!signal.aborted) {
      woken = false;
      let full = false;
      try {
        const page = await events.readEvents(last, PAGE);
        if (unavailable) io.stderr('The store answers again.\n');
        unavailable = false;
        if (page.pruned) {
          io.stderr(
            `The events after ${last} are no longer kept (EVENTS_RETENTION_DAYS): what changed meanwhile is in "pets list". ` +
              `Going on after ${page.head}, the newest.\n`,
          );
          last = page.head;
          continue;
        }
        if (last > page.head) {
          io.stderr(
            `No event ${last} in this store: its newest is ${page.head} (the store was rebuilt, or --after is from another store); ` +
              `what changed is in "pets list". Going on after ${page.head}, the newest.\n`,
          );
          last = page.head;
          continue;
        }
        if (page.items.length > 0) {
          await write(page.items.map((e) => `${format(e)}\n`).join(''));
          last = page.items.at(-1)!.seq;
        }
        full = page.items.length === PAGE;
      } catch (err) {
        if (!(err instanceof StoreUnavailableError)) throw err;
        if (!unavailable) io.stderr(`The store is out of reach (${err.message}); trying again.\n`);
        unavailable = true;
      }
      if (full || woken) continue;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          wake = undefined;
          resolve();
        };
        const timer = setTimeout(done, TAIL_POLL_MS);
        signal.addEventListener('abort', done, { once: true });
        wake = done;
      });
    }
  } finally {
    stopListening();
    io.stdoutStream?.off('error', onOutputError);
  }
}

/** Writes to stdout, waiting while a slow reader (a pipe) has not taken the last page, so memory holds one page. */
function output(io: CliIO, signal: AbortSignal): (text: string) => Promise<void> {
  const stream = io.stdoutStream;
  if (!stream) return (text) => Promise.resolve(io.stdout(text));
  return async (text) => {
    if (signal.aborted || stream.write(text)) return;
    await once(stream, 'drain', { signal }).catch(() => undefined);
  };
}

/** One event as a line a person reads: seq, when, what, which pet (a reservation: its id and every pet it holds), from and to, and who. */
export function eventLine(e: InventoryEvent): string {
  const who = whoMade(e);
  if (isReservationEvent(e)) {
    const items = e.items.map((i) => `pet ${i.petId} x${i.quantity}`).join(', ');
    return [`${e.seq}`, e.occurredAt.toISOString(), e.type, e.reservationId, items, e.status, e.reference ?? '-', who].join('  ');
  }
  const what = e.type.replace(/^inventory\./, '');
  const change = `${e.previousQuantity ?? '-'} -> ${e.quantity ?? '-'}`;
  return [`${e.seq}`, e.occurredAt.toISOString(), what, `pet ${e.petId}`, change, e.status, e.reason ?? '-', who].join('  ');
}

/** Who made an event's change: a request's key and id, or its source when no request made it (cli, expiry). */
function whoMade(e: InventoryEvent): string {
  return e.source === 'api' ? `key ${e.keyId ?? '-'} request ${e.requestId ?? '-'}` : e.source;
}
