import { parse } from 'csv-parse';
import type { FormatReader } from './reader.js';

/** Where the records of a CSV file go, in file order, with the line each starts on. */
export interface RecordSink {
  record(cells: string[], line: number): void;
  /** The text is not valid CSV from this line on: nothing more is read. */
  invalid(error: { line: number; message: string }): void;
  /** True once the sink wants no more records (it stopped at a problem of its own). */
  readonly stopped: boolean;
}

/**
 * A line csv-parse reads as its cells split at the commas and nothing else: printable ASCII, no
 * quote, no space (nothing to trim, nothing quoted). An exported file is made of such lines.
 */
const PLAIN_LINE = /^[!#-~]*$/;
const CR = 13;

/**
 * The records of CSV text: cells may be quoted and have spaces around them (trimmed), lines end in
 * LF or CRLF, mixed, and a blank line is a record of one empty cell. Parsed by csv-parse, fed and
 * drained synchronously, so a piece of text is parsed as it comes. A record's line counts the
 * line breaks inside quoted cells before it.
 *
 * Plain lines (PLAIN_LINE) are split at their commas here, as long as every line so far was plain:
 * csv-parse makes the same cells of them, at a third of the speed (decisions 5.8). From the first
 * other line on, csv-parse reads the rest of the text, told first of the lines before it as blank
 * lines, so that the lines its own messages name are the file's.
 */
export function csvRecords(sink: RecordSink): FormatReader {
  const parser = parse({ trim: true, relax_column_count: true, record_delimiter: ['\r\n', '\n'] });
  // Its errors are read from parser.errored right after each piece; unhandled, the event would throw.
  parser.on('error', () => {});
  /** Where the next record starts. */
  let line = 1;
  /** Every line so far was plain; the start of the next line, not yet ended, while it is so. */
  let plain = true;
  let unended = '';
  let invalid = false;
  /** Records of csv-parse still to pass over: the blank lines it was told of in place of the plain lines before it. */
  let padding = 0;
  const done = () => invalid || sink.stopped;

  const drain = (): void => {
    let cells: string[] | null;
    while (!done() && (cells = parser.read() as string[] | null) !== null) {
      const at = line;
      line += 1 + lineBreaksIn(cells);
      // The blank lines that stand for the plain lines read before csv-parse took over.
      if (padding > 0) {
        padding--;
        continue;
      }
      sink.record(cells, at);
    }
    if (!done() && parser.errored) {
      invalid = true;
      sink.invalid({ line, message: `not valid CSV: ${parser.errored.message}` });
    }
  };

  /** Takes the plain lines of `text` up to its last line break; from the first other line on, hands the text to csv-parse. */
  const takePlain = (text: string): void => {
    let start = 0;
    for (let end = text.indexOf('\n'); end >= 0 && !done(); end = text.indexOf('\n', start)) {
      const lineText = text.slice(start, end > start && text.charCodeAt(end - 1) === CR ? end - 1 : end);
      if (!PLAIN_LINE.test(lineText)) return leavePlain(text.slice(start));
      sink.record(lineText.split(','), line++);
      start = end + 1;
    }
    unended = text.slice(start);
  };

  /** Hands the rest of the text (from `rest` on) to csv-parse, after as many blank lines as were read. */
  const leavePlain = (rest: string): void => {
    plain = false;
    unended = '';
    padding = line - 1;
    line = 1;
    parser.write('\n'.repeat(padding) + rest);
    drain();
  };

  return {
    push(text) {
      if (done()) return;
      if (plain) return takePlain(unended + text);
      parser.write(text);
      drain();
    },
    end() {
      if (done()) return;
      if (plain) {
        if (unended === '') return;
        if (PLAIN_LINE.test(unended)) return sink.record(unended.split(','), line++);
        leavePlain(unended);
        if (done()) return;
      }
      parser.end();
      drain();
    },
  };
}

function lineBreaksIn(cells: readonly string[]): number {
  let breaks = 0;
  for (const cell of cells) {
    for (let at = cell.indexOf('\n'); at >= 0; at = cell.indexOf('\n', at + 1)) breaks++;
  }
  return breaks;
}
