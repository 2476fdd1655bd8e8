import { importChange, type ImportConflict, type ImportOutcome } from '../../domain/import.js';
import { INT64_MAX, INT64_MIN } from '../../domain/pet-id.js';
import { PET_STATUSES, QUANTITY_MAX, QUANTITY_MIN } from '../../schemas/values.js';
import { parseCommandArgs, printHelp, type Command } from '../command.js';
import { CliError, EXIT_USAGE } from '../io.js';
import { formatRate } from '../rate.js';
import { withStore } from '../store-access.js';
import { IMPORT_BATCH, readInBatches, type ReadLog } from './batches.js';
import { openFileText } from './file-text.js';
import { CSV_HEADER, IMPORT_FORMATS, importFormatFromPath, type ImportFormat } from './format.js';
import { describeLocation, firstProblems, formatImportError, MAX_IMPORT_ERRORS, type ImportError } from './problems.js';
import { importProgress } from './progress.js';

const IMPORT_HELP = `Usage: petstore-inventory pets import FILE [--format csv|json] [--upsert]

Creates inventory entries from a file, checked whole before anything is written: the file is
read in batches of ${IMPORT_BATCH.toLocaleString('en-US')} entries, each staged in the store as it comes (so the size of the
file does not matter), and only once all of it is checked is it applied. Any problem in the file
(the first ${MAX_IMPORT_ERRORS} are listed, each with its line), a petId twice in the file, or a petId that
already has an entry imports nothing. A retired petId ("pets remove") is created again.
On SQLite the write goes in chunks, each a short transaction of its own, so a running server's
PATCHes go on meanwhile; an import stopped part way keeps the chunks it wrote, and the same file
again with --upsert writes the rest. On PostgreSQL it is one transaction.

  CSV   the header ${CSV_HEADER}, then one entry per line:
          ${CSV_HEADER}
          9007199254740993,12,available
  JSON  an array of objects with exactly these fields, petId and quantity as JSON integers:
          [{"petId": 9007199254740993, "quantity": 12, "status": "available"}]

  petId     int64 from ${INT64_MIN} to ${INT64_MAX}, no leading zeros or
            plus sign; each petId at most once in a file
  quantity  integer from ${QUANTITY_MIN} to ${QUANTITY_MAX}
  status    ${PET_STATUSES.join(', ')}

"pets export" writes exactly this form.

Options:
  --upsert         a stocktake: an entry that exists takes the file's quantity, and each change
                   of quantity is written to its history (reason correction, key "import",
                   one request id import-<uuid> per run); an entry whose quantity is already the
                   file's is left as it is; an entry whose status is not the file's is refused
                   (an import never changes a status), and then nothing is imported
  --format FORMAT  csv or json (default: from the file's extension, .csv or .json)
  -h, --help       show this help

Progress goes to stderr (a bar on a terminal, a line every few seconds elsewhere); the summary
(entries read, created, updated, unchanged, rejected, the time taken) to stdout.
`;

export const importCommand: Command = {
  summary: 'create entries from a CSV or JSON file, checked whole first; --upsert for a stocktake',
  async run(args, io) {
    const { values, positionals } = parseCommandArgs({
      args,
      options: { format: { type: 'string' }, upsert: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    });
    if (values.help) return printHelp(io, IMPORT_HELP);
    const [file] = positionals;
    if (file === undefined || positionals.length > 1) throw new CliError('pets import takes exactly one FILE', EXIT_USAGE);
    const format = importFormat(file, values.format);
    const text = await openFileText(file);
    const started = performance.now();
    const { source, log } = readInBatches(text, format);
    const progress = importProgress(io, (phase) => ({
      bytes: text.bytesRead,
      totalBytes: text.size,
      rows: log.read,
      seconds: (performance.now() - started) / 1000,
      phase,
    }));
    let outcome: ImportOutcome;
    try {
      outcome = await withStore(io, ['changes'], ({ changes }) =>
        changes.importItems(source, {
          upsert: values.upsert ?? false,
          change: importChange(new Date()),
          conflictsMax: MAX_IMPORT_ERRORS,
          onPhase: (phase) => progress.phase(phase),
        }),
      );
    } finally {
      progress.stop();
    }
    const seconds = (performance.now() - started) / 1000;
    if (outcome.applied && log.read === 0) throw new CliError(`${file}: nothing to import (the file holds no entries)`);
    const conflicts = outcome.applied ? [] : outcome.conflicts;
    const problems = firstProblems(log.problems, conflicts.map(conflictProblem));
    for (const problem of problems) io.stderr(`${formatImportError(problem)}\n`);
    const rejected = log.refused + (outcome.applied ? 0 : outcome.conflictRows);
    const done = outcome.applied ? outcome : { created: 0, updated: 0, unchanged: 0 };
    io.stdout(
      `read ${count(log.read)}, created ${count(done.created)}, updated ${count(done.updated)}, unchanged ${count(done.unchanged)}, ` +
        `rejected ${count(rejected)} in ${formatRate(log.read, seconds, 'rows')}\n`,
    );
    if (outcome.applied) return 0;
    const more = log.moreProblems || log.problems.length + conflicts.length > problems.length || (!outcome.applied && outcome.conflictRows > conflicts.length);
    throw new CliError(`${file}: ${refusal(log, rejected, more)}; nothing was imported`);
  },
};

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

/** What the store refused, as a problem of the file. */
function conflictProblem(conflict: ImportConflict): ImportError {
  const { at, petId } = conflict;
  switch (conflict.kind) {
    case 'duplicate':
      return { ...at, field: 'petId', message: `duplicate petId ${petId}, also at ${describeLocation(conflict.first)}` };
    case 'exists':
      return { ...at, field: 'petId', message: `pet ${petId} already has an inventory entry (--upsert sets the quantity of existing entries)` };
    case 'status_differs':
      return {
        ...at,
        field: 'status',
        message: `pet ${petId} is ${conflict.stored} in the store, not ${conflict.given}: an import never changes a status`,
      };
  }
}

function refusal(log: ReadLog, rejected: number, more: boolean): string {
  const listed = more ? `the first ${MAX_IMPORT_ERRORS} problems are listed above` : 'listed above';
  const entries = `${count(rejected)} ${rejected === 1 ? 'entry' : 'entries'} refused (${listed})`;
  return log.unreadable ? `the file cannot be read to its end (see above)${rejected > 0 ? `, and ${entries}` : ''}` : entries;
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}
