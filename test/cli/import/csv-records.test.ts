import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'csv-parse';
import { csvRecords } from '../../../src/cli/import/csv-records.js';

/**
 * The records of CSV text are csv-parse's, whether its plain lines were split by csvRecords
 * itself or parsed by csv-parse: checked against csv-parse alone on text made at random of plain
 * lines and of the lines that are not (quotes, spaces, tabs, carriage returns, non-ASCII spaces,
 * line breaks in quoted cells, broken quotes), fed in pieces of every size.
 */

interface Read {
  records: [cells: string[], line: number][];
  invalid: { line: number; message: string } | undefined;
}

/** What csv-parse alone makes of the text, fed in the same pieces, each record's line counted as csvRecords counts it. */
function csvParseAlone(pieces: readonly string[]): Read {
  const read: Read = { records: [], invalid: undefined };
  const parser = parse({ trim: true, relax_column_count: true, record_delimiter: ['\r\n', '\n'] });
  parser.on('error', () => {});
  let line = 1;
  const drain = () => {
    let cells: string[] | null;
    while (read.invalid === undefined && (cells = parser.read() as string[] | null) !== null) {
      read.records.push([cells, line]);
      line += 1 + cells.reduce((n, cell) => n + cell.split('\n').length - 1, 0);
    }
    if (read.invalid === undefined && parser.errored) read.invalid = { line, message: `not valid CSV: ${parser.errored.message}` };
  };
  for (const piece of pieces) {
    parser.write(piece);
    drain();
    if (read.invalid) return read;
  }
  parser.end();
  drain();
  return read;
}

function withCsvRecords(pieces: readonly string[]): Read {
  const read: Read = { records: [], invalid: undefined };
  const reader = csvRecords({
    record: (cells, line) => read.records.push([cells, line]),
    invalid: (error) => (read.invalid = error),
    get stopped() {
      return false;
    },
  });
  for (const piece of pieces) reader.push(piece);
  reader.end();
  return read;
}

/** A small seeded generator, so a failure can be run again. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PLAIN_CELLS = ['101', '-7', '9223372036854775807', 'available', 'sold', 'x', '', '0', '1e3', '#', '~'];
const OTHER_CELLS = [' 5 ', '\t12', '"quoted"', '"a, b"', '"two\nlines"', '"a ""b"""', 'a"b', '"open', '\u00a0sold', 'é', 'a\rb', ' ', '"x" y'];

function textOf(next: () => number, lines: number): string {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  let text = '';
  for (let i = 0; i < lines; i++) {
    const cells = Array.from({ length: 1 + Math.floor(next() * 4) }, () => (next() < 0.05 ? pick(OTHER_CELLS) : pick(PLAIN_CELLS)));
    text += (next() < 0.1 ? '' : cells.join(',')) + (next() < 0.3 ? '\r\n' : '\n');
  }
  // Sometimes no line break after the last line, or a lone carriage return.
  const last = next();
  return last < 0.2 ? text.slice(0, -1) : last < 0.25 ? `${text}7,1,sold\r` : text;
}

function piecesOf(next: () => number, text: string): string[] {
  const pieces: string[] = [];
  for (let at = 0; at < text.length; ) {
    const size = next() < 0.5 ? 1 + Math.floor(next() * 8) : 1 + Math.floor(next() * 200);
    pieces.push(text.slice(at, at + size));
    at += size;
  }
  return pieces;
}

test('the records of CSV text are csv-parse records, plain lines or not, whatever the pieces it comes in', () => {
  const next = random(20261207);
  let handedOver = 0;
  for (let n = 0; n < 2000; n++) {
    const text = textOf(next, 1 + Math.floor(next() * 30));
    const pieces = piecesOf(next, text);
    const expected = csvParseAlone(pieces);
    assert.deepEqual(withCsvRecords(pieces), expected, `text ${JSON.stringify(text)} in pieces ${JSON.stringify(pieces)}`);
    if (!/^[!#-~\r\n]*$/.test(text)) handedOver++;
  }
  assert.ok(handedOver > 500 && handedOver < 1900, `${handedOver} texts of 2,000 had a line for csv-parse: both paths ran`);
});

test('a file of plain lines but its last, or its first, is read alike', () => {
  for (const text of ['petId,quantity,status\n1,2,sold\n"3",4,sold\n', '"petId",quantity,status\r\n1,2,sold\r\n', 'a,b\n\n\nc," d\ne"\n5,6', 'a,b\n"broken\n']) {
    assert.deepEqual(withCsvRecords([text]), csvParseAlone([text]), JSON.stringify(text));
  }
  assert.deepEqual(withCsvRecords(['a,b\n\n\nc,"d\ne"\n5,6']).records, [
    [['a', 'b'], 1],
    [[''], 2],
    [[''], 3],
    [['c', 'd\ne'], 4],
    [['5', '6'], 6],
  ]);
  assert.deepEqual(withCsvRecords(['a,b\n1,"broken\n']).invalid?.line, 2, 'csv-parse names the line of the file');
});
