import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import type { Entries } from '../store/store.js';
import { parseCommandArgs, printHelp, type Command } from './command.js';
import { EXPORT_WRITERS } from './export-format.js';
import { IMPORT_FORMATS, importFormatFromPath, type ImportFormat } from './import/format.js';
import { CliError, EXIT_USAGE, type CliIO } from './io.js';
import { formatRate } from './rate.js';
import { withExistingStore } from './store-access.js';

/** Entries read from the store at a time: the most the export holds. */
export const EXPORT_PAGE = 10_000;

const EXPORT_HELP = `Usage: petstore-inventory pets export [--format csv|json] [FILE]

Writes every inventory entry, by petId, in the form "pets import" reads back unchanged: CSV with
the header petId,quantity,status, or a JSON array with one entry per line; petIds as their exact
digits. Reads the store ${EXPORT_PAGE.toLocaleString('en-US')} entries at a time and writes as it reads, so the
size of the catalogue does not matter. Each page is one consistent read: an entry changed while
the export runs appears once, as it was when its page was read. Retired entries are left out.

Options:
  --format FORMAT  csv or json (default: from FILE's extension, else csv)
  FILE             where to write (replaced if it exists); default: standard output
  -h, --help       show this help
`;

export const exportCommand: Command = {
  summary: 'write every entry as CSV or JSON, as pets import reads it',
  async run(args, io) {
    const { values, positionals } = parseCommandArgs({
      args,
      options: { format: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    });
    if (values.help) return printHelp(io, EXPORT_HELP);
    if (positionals.length > 1) throw new CliError('pets export takes at most one FILE', EXIT_USAGE);
    const [file] = positionals;
    const format = exportFormat(file, values.format);
    const started = performance.now();
    const count = await withExistingStore(io, ['entries'], ({ entries }) => (file === undefined ? exportTo(entries, format, stdoutOf(io)) : exportToFile(entries, format, file)));
    const seconds = (performance.now() - started) / 1000;
    const summary = `exported ${count.toLocaleString('en-US')} ${count === 1 ? 'entry' : 'entries'}${file === undefined ? '' : ` to ${file}`} in ${formatRate(count, seconds, 'entries')}\n`;
    // On standard output the entries are the output: the summary goes beside them.
    if (file === undefined) io.stderr(summary);
    else io.stdout(summary);
    return 0;
  },
};

function exportFormat(file: string | undefined, option: string | undefined): ImportFormat {
  if (option === undefined) return (file !== undefined && importFormatFromPath(file)) || 'csv';
  if (!(IMPORT_FORMATS as readonly string[]).includes(option)) {
    throw new CliError(`--format must be one of ${IMPORT_FORMATS.join(', ')} (got ${JSON.stringify(option)})`, EXIT_USAGE);
  }
  return option as ImportFormat;
}

/** Writes the export to `file`; a file left half written by a failure is removed. */
async function exportToFile(entries: Pick<Entries, 'listInventoryPage'>, format: ImportFormat, file: string): Promise<number> {
  const out = createWriteStream(file);
  try {
    const count = await exportTo(entries, format, out);
    out.end();
    await once(out, 'finish');
    return count;
  } catch (err) {
    const writeFailed = out.errored !== null;
    out.destroy();
    await rm(file, { force: true });
    throw writeFailed ? new CliError(`cannot write ${file}: ${(err as Error).message}`) : err;
  }
}

/** Writes every entry page by page, waiting whenever `out` has enough buffered; resolves to how many. */
export async function exportTo(entries: Pick<Entries, 'listInventoryPage'>, format: ImportFormat, out: NodeJS.WritableStream): Promise<number> {
  const writer = EXPORT_WRITERS[format];
  let failure: Error | undefined;
  const onError = (err: Error) => (failure ??= err);
  out.on('error', onError);
  const write = async (text: string) => {
    if (failure) throw failure;
    if (!out.write(text)) await once(out, 'drain');
  };
  try {
    await write(writer.start);
    let count = 0;
    let after: bigint | undefined;
    for (;;) {
      const page = await entries.listInventoryPage(after, EXPORT_PAGE);
      if (page.length > 0) await write(writer.page(page, count === 0));
      count += page.length;
      if (page.length < EXPORT_PAGE) break;
      after = page.at(-1)!.petId;
    }
    await write(writer.end(count === 0));
    return count;
  } finally {
    out.off('error', onError);
  }
}

/** Standard output as a stream: the process's own, or one that hands each piece to io.stdout. */
function stdoutOf(io: CliIO): NodeJS.WritableStream {
  return (
    io.stdoutStream ??
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        io.stdout(chunk.toString());
        done();
      },
    })
  );
}
