import assert from 'node:assert/strict';
import { test } from 'node:test';
import { csvReader } from '../../../src/cli/import/csv-reader.js';
import { importFormatFromPath, type ImportFormat } from '../../../src/cli/import/format.js';
import { MAX_ENTRY_CHARS, jsonReader } from '../../../src/cli/import/json-reader.js';
import { formatImportError, type ImportError } from '../../../src/cli/import/problems.js';
import type { ImportRow } from '../../../src/domain/import.js';

const QUANTITY_MESSAGE = 'quantity must be an integer from 0 to 2147483647';
const PET_ID_MESSAGE = 'petId must be a decimal integer from -9223372036854775808 to 9223372036854775807, without leading zeros or a plus sign';

interface Read {
  entries: ImportRow[];
  errors: ImportError[];
  /** Entries refused, each with one or more errors. */
  refused: number;
  unreadable: boolean;
}

/**
 * What a reader makes of `text`, fed in pieces of `piece` characters (every size must read the
 * same: pieces may cut an entry, a string or a number anywhere).
 */
function readWith(format: ImportFormat, text: string, piece: number): Read {
  const read: Read = { entries: [], errors: [], refused: 0, unreadable: false };
  const reader = (format === 'csv' ? csvReader : jsonReader)({
    entry: (row) => read.entries.push(row),
    refused: (errors) => {
      read.refused++;
      read.errors.push(...errors);
    },
    unreadable: (error) => {
      read.unreadable = true;
      read.errors.push(error);
    },
  });
  for (let i = 0; i < text.length; i += piece) reader.push(text.slice(i, i + piece));
  reader.end();
  return read;
}

/** The reading of `text` whole, after checking that every way of cutting it reads the same. */
function read(format: ImportFormat, text: string): Read {
  const whole = readWith(format, text, Math.max(1, text.length));
  for (const piece of [1, 2, 3, 7, 64]) assert.deepEqual(readWith(format, text, piece), whole, `in pieces of ${piece}`);
  return whole;
}

const parseCsv = (text: string) => read('csv', text);
const parseJson = (text: string) => read('json', text);

function entriesOf(result: Read): ImportRow[] {
  assert.deepEqual(result.errors, [], 'expected no problems');
  return result.entries;
}

function errorsOf(result: Read): ImportError[] {
  assert.ok(result.errors.length > 0, 'expected problems');
  return result.errors;
}

const csv = (...lines: string[]) => lines.join('\n');

// --- CSV -----------------------------------------------------------------------------------

test('CSV: entries with their lines', () => {
  const entries = entriesOf(parseCsv(csv('petId,quantity,status', '1,5,available', '2,0,pending', '-3,2147483647,sold', '')));
  assert.deepEqual(entries, [
    { line: 2, item: { petId: 1n, quantity: 5, status: 'available' } },
    { line: 3, item: { petId: 2n, quantity: 0, status: 'pending' } },
    { line: 4, item: { petId: -3n, quantity: 2147483647, status: 'sold' } },
  ]);
});

test('CSV: tolerates CRLF, blank lines, spaces around cells and quoted cells', () => {
  const text = ' petId , quantity,status\r\n\r\n 7 ,  8 ,"sold"\r\n"9", 10 , "pe""nding"\r\n  \r\n"11",12,available\r\n';
  const result = parseCsv(text);
  assert.deepEqual(errorsOf(result), [{ line: 4, field: 'status', message: 'status must be one of available, pending, sold (got "pe\\"nding")' }]);
  const ok = parseCsv(text.replace('pe""nding', 'pending'));
  assert.deepEqual(entriesOf(ok), [
    { line: 3, item: { petId: 7n, quantity: 8, status: 'sold' } },
    { line: 4, item: { petId: 9n, quantity: 10, status: 'pending' } },
    { line: 6, item: { petId: 11n, quantity: 12, status: 'available' } },
  ]);
});

test('CSV: int64 bounds and 2^53+1 are kept exactly', () => {
  const entries = entriesOf(
    parseCsv(csv('petId,quantity,status', '9223372036854775807,1,sold', '-9223372036854775808,1,sold', '9007199254740993,1,sold')),
  );
  assert.deepEqual(
    entries.map((e) => e.item.petId),
    [9223372036854775807n, -9223372036854775808n, 9007199254740993n],
  );
});

test('CSV: petIds that are not canonical int64 are refused, each naming its line', () => {
  const bad = ['9223372036854775808', '-9223372036854775809', '007', '+5', '1.0', '1e3', '', 'abc', '0x10'];
  const errors = errorsOf(parseCsv(csv('petId,quantity,status', ...bad.map((id) => `${id},1,sold`))));
  assert.deepEqual(
    errors,
    bad.map((id, i) => ({ line: i + 2, field: 'petId', message: `${PET_ID_MESSAGE} (got ${JSON.stringify(id)})` })),
  );
});

test('CSV: quantity outside 0..2147483647 or not an integer is refused', () => {
  const bad = ['-3', '2147483648', '1.5', '1.0', '007', 'ten', '', '1e2'];
  const errors = errorsOf(parseCsv(csv('petId,quantity,status', ...bad.map((q, i) => `${i},${q},sold`))));
  assert.equal(formatImportError(errors[0]!), `line 2: ${QUANTITY_MESSAGE} (got "-3")`);
  assert.deepEqual(
    errors,
    bad.map((q, i) => ({ line: i + 2, field: 'quantity', message: `${QUANTITY_MESSAGE} (got ${JSON.stringify(q)})` })),
  );
});

test('CSV: status must be one of the PetStatus values, case and all', () => {
  const errors = errorsOf(parseCsv(csv('petId,quantity,status', '1,1,Sold', '2,1,gone')));
  assert.deepEqual(errors, [
    { line: 2, field: 'status', message: 'status must be one of available, pending, sold (got "Sold")' },
    { line: 3, field: 'status', message: 'status must be one of available, pending, sold (got "gone")' },
  ]);
});

test('CSV: every problem of a line is reported', () => {
  const errors = errorsOf(parseCsv(csv('petId,quantity,status', 'x,-1,y')));
  assert.deepEqual(
    errors.map((e) => e.field),
    ['petId', 'quantity', 'status'],
  );
  assert.ok(errors.every((e) => e.line === 2));
});

test('CSV: a petId twice is read twice (the store refuses the second), and mixed line endings are lines', () => {
  const entries = entriesOf(parseCsv('petId,quantity,status\r\n5,1,sold\n6,1,sold\r\n5,2,pending'));
  assert.deepEqual(entries.map((e) => [e.line, e.item.petId]), [[2, 5n], [3, 6n], [4, 5n]]);
});

test('CSV: a line break inside a quoted cell moves the lines after it', () => {
  const result = parseCsv(csv('petId,quantity,status', '1,"2', '",sold', '3,4,sold', '"5\r\n",1,sold', '6,1,sold'));
  assert.deepEqual(result.errors.map((e) => [e.line, e.field]), [[2, 'quantity'], [5, 'petId']]);
  assert.deepEqual(result.entries.map((e) => [e.line, e.item.petId]), [[4, 3n], [7, 6n]]);
});

test('CSV: the header must be exactly petId,quantity,status', () => {
  for (const header of ['petid,quantity,status', 'petId,quantity', 'petId,quantity,status,extra', '1,2,sold', '"petId,quantity",status']) {
    const errors = errorsOf(parseCsv(csv('', header, '1,2,sold')));
    assert.equal(errors.length, 1, header);
    assert.equal(errors[0]!.line, 2);
    assert.match(errors[0]!.message, /^the header must be exactly petId,quantity,status/);
  }
});

test('CSV: wrong cell counts are refused; broken quotes stop the reading, since nothing after them can be told apart', () => {
  const result = parseCsv(csv('petId,quantity,status', '1,2', '3,4,sold,', '"5,6,sold', '7,1,sold'));
  assert.deepEqual(result.errors.slice(0, 2), [
    { line: 2, message: 'expected 3 cells (petId,quantity,status), found 2' },
    { line: 3, message: 'expected 3 cells (petId,quantity,status), found 4' },
  ]);
  assert.equal(result.errors[2]!.line, 4);
  assert.match(result.errors[2]!.message, /^not valid CSV: Quote Not Closed/);
  assert.deepEqual([result.entries, result.refused, result.unreadable], [[], 2, true]);

  const after = parseCsv(csv('petId,quantity,status', '1,1,sold', '"7" x,1,sold', '8,1,sold'));
  assert.deepEqual(after.entries.map((e) => e.item.petId), [1n]);
  assert.equal(after.errors.length, 1);
  assert.equal(after.errors[0]!.line, 3);
  assert.match(after.errors[0]!.message, /^not valid CSV: Invalid Closing Quote/);
});

test('CSV: an empty file or a header alone holds no entries', () => {
  assert.deepEqual(entriesOf(parseCsv('')), []);
  assert.deepEqual(entriesOf(parseCsv('\r\n  \n')), []);
  assert.deepEqual(entriesOf(parseCsv('petId,quantity,status\r\n')), []);
});

test('CSV: every refused line is read and counted, past the problems the CLI lists', () => {
  const lines = Array.from({ length: 30 }, (_, i) => `${i},-1,sold`);
  const result = parseCsv(csv('petId,quantity,status', ...lines, '31,1,sold'));
  assert.deepEqual([result.refused, result.errors.length, result.errors.at(-1)!.line], [30, 30, 31]);
  assert.deepEqual(result.entries.map((e) => e.line), [32]);
});

// --- JSON ----------------------------------------------------------------------------------

test('JSON: entries with their position and line', () => {
  const text = `[
  {"petId": 1, "quantity": 5, "status": "available"},
  {
    "status": "sold",
    "quantity": 0,
    "petId": -2
  }
]`;
  assert.deepEqual(entriesOf(parseJson(text)), [
    { line: 2, index: 1, item: { petId: 1n, quantity: 5, status: 'available' } },
    { line: 3, index: 2, item: { petId: -2n, quantity: 0, status: 'sold' } },
  ]);
});

test('JSON: int64 bounds and 2^53+1 are kept exactly', () => {
  const ids = ['9223372036854775807', '-9223372036854775808', '9007199254740993', '0'];
  const text = `[${ids.map((id) => `{"petId":${id},"quantity":1,"status":"sold"}`).join(',\r\n')}]`;
  assert.deepEqual(
    entriesOf(parseJson(text)).map((e) => e.item.petId),
    ids.map(BigInt),
  );
});

test('JSON: petIds out of int64 range or not integer literals are refused', () => {
  const bad = ['9223372036854775808', '-9223372036854775809', '1.0', '1e3', '1E+2', '-0.5'];
  const text = `[\n${bad.map((id) => `{"petId": ${id}, "quantity": 1, "status": "sold"}`).join(',\n')}\n]`;
  assert.deepEqual(
    errorsOf(parseJson(text)),
    bad.map((id, i) => ({ line: i + 2, index: i + 1, field: 'petId', message: `${PET_ID_MESSAGE} (got ${id})` })),
  );
});

test('JSON: petId as a string and other wrong types are refused, naming the type', () => {
  const text = `[
{"petId": "5", "quantity": "1", "status": 3},
{"petId": null, "quantity": true, "status": ["sold"]}
]`;
  assert.deepEqual(errorsOf(parseJson(text)), [
    { line: 2, index: 1, field: 'petId', message: 'petId must be a number, not a string (got "5")' },
    { line: 2, index: 1, field: 'quantity', message: 'quantity must be a number, not a string (got "1")' },
    { line: 2, index: 1, field: 'status', message: 'status must be a string, not a number (got 3)' },
    { line: 3, index: 2, field: 'petId', message: 'petId must be a number, not null (got null)' },
    { line: 3, index: 2, field: 'quantity', message: 'quantity must be a number, not a boolean (got true)' },
    { line: 3, index: 2, field: 'status', message: 'status must be a string, not an array (got […])' },
  ]);
});

test('JSON: quantity must be an integer literal from 0 to 2147483647', () => {
  const bad = ['1.0', '-3', '2147483648', '1e2', '-0'];
  const text = `[\n${bad.map((q, i) => `{"petId": ${i}, "quantity": ${q}, "status": "sold"}`).join(',\n')}\n]`;
  const errors = errorsOf(parseJson(text));
  assert.deepEqual(
    errors,
    bad.map((q, i) => ({ line: i + 2, index: i + 1, field: 'quantity', message: `${QUANTITY_MESSAGE} (got ${q})` })),
  );
  assert.equal(formatImportError(errors[1]!), `item 2 (line 3): ${QUANTITY_MESSAGE} (got -3)`);
});

test('JSON: a field error names the line of the field, a missing field the line of the item', () => {
  const text = `[
  {
    "petId": 1,
    "quantity": -1
  }
]`;
  assert.deepEqual(errorsOf(parseJson(text)), [
    { line: 4, index: 1, field: 'quantity', message: `${QUANTITY_MESSAGE} (got -1)` },
    { line: 2, index: 1, field: 'status', message: 'status is missing' },
  ]);
});

test('JSON: unknown and repeated fields are refused, __proto__ included', () => {
  const text = `[
{"petId": 1, "quantity": 1, "status": "sold", "name": "Rex"},
{"petId": 2, "quantity": 1, "status": "sold", "__proto__": {}},
{"petId": 3, "quantity": 1, "status": "sold", "petId": 4}
]`;
  assert.deepEqual(errorsOf(parseJson(text)), [
    { line: 2, index: 1, field: 'name', message: 'unknown field "name" (allowed: petId, quantity, status)' },
    { line: 3, index: 2, field: '__proto__', message: 'unknown field "__proto__" (allowed: petId, quantity, status)' },
    { line: 4, index: 3, field: 'petId', message: 'the field "petId" appears twice' },
  ]);
});

test('JSON: entries in the form pets export writes are read like any other, bad values included', () => {
  const text = '[\n{"petId":-1,"quantity":0,"status":"pending"},\n{"petId":2,"quantity":2147483648,"status":"sold"},\n{"petId":9223372036854775808,"quantity":1,"status":"sold"},\n{"petId":4,"quantity":4,"status":"sold"}\n]\n';
  const result = parseJson(text);
  assert.deepEqual(result.entries, [
    { line: 2, index: 1, item: { petId: -1n, quantity: 0, status: 'pending' } },
    { line: 5, index: 4, item: { petId: 4n, quantity: 4, status: 'sold' } },
  ]);
  assert.deepEqual(result.errors, [
    { line: 3, index: 2, field: 'quantity', message: `${QUANTITY_MESSAGE} (got 2147483648)` },
    { line: 4, index: 3, field: 'petId', message: `${PET_ID_MESSAGE} (got 9223372036854775808)` },
  ]);
});

test('JSON: several entries on a line are told apart by their position', () => {
  const entries = entriesOf(parseJson('[{"petId": 1, "quantity": 1, "status": "sold"}, {"petId": 1, "quantity": 2, "status": "sold"},\n{"petId": 3, "quantity": 1, "status": "sold"}]'));
  assert.deepEqual(entries.map((e) => [e.line, e.index, e.item.quantity]), [[1, 1, 1], [1, 2, 2], [2, 3, 1]]);
});

test(`JSON: an entry longer than ${MAX_ENTRY_CHARS} characters stops the reading rather than being held`, () => {
  const long = `[{"petId": 1, "quantity": 1, "status": "sold"},\n{"status": "${'x'.repeat(2 * MAX_ENTRY_CHARS)}"}]`;
  const result = readWith('json', long, 64 * 1024);
  assert.deepEqual(result.entries.map((e) => e.item.petId), [1n]);
  assert.deepEqual(result.errors, [{ line: 2, message: `an entry is longer than ${MAX_ENTRY_CHARS} characters` }]);
  assert.equal(result.unreadable, true);
});

test('JSON: the file must be an array of objects', () => {
  assert.deepEqual(errorsOf(parseJson('\n{"petId": 1}')), [
    { line: 2, message: 'the file must hold a JSON array of inventory entries, found an object' },
  ]);
  assert.deepEqual(errorsOf(parseJson('[1,\n"x"]')), [
    { line: 1, index: 1, message: 'an entry must be an object with petId, quantity, status, found a number' },
    { line: 2, index: 2, message: 'an entry must be an object with petId, quantity, status, found a string' },
  ]);
});

test('JSON: syntax errors name their line', () => {
  const cases: [string, number, RegExp][] = [
    ['[\n{"petId": 1, "quantity": 1, "status": "sold"}\n', 3, /expected "," or "\]" in an array, found the end of the file/],
    ['[\n{"petId": 1,}\n]', 2, /expected a field name in double quotes, found "}"/],
    ['[\n{"petId" 1}]', 2, /expected ":" after a field name/],
    ['[\n\n{"status": "so\nld"}]', 3, /raw control character/],
    ['[{"status": "\\x"}]', 1, /unknown escape \\x/],
    ['[{"petId": 01}]', 1, /expected "," or "}" in an object, found "1"/],
    ['[] []', 1, /unexpected text after the end of the JSON value/],
    ['[tru]', 1, /expected a value, found "t"/],
    ['', 1, /expected a value, found the end of the file/],
    ['[{"status": "sold}]', 1, /not closed before the end of the file/],
    [`${'['.repeat(100)}${']'.repeat(100)}`, 1, /nested more than 64 levels deep/],
  ];
  for (const [text, line, message] of cases) {
    const errors = errorsOf(parseJson(text));
    assert.equal(errors.length, 1, text);
    assert.equal(errors[0]!.line, line, text);
    assert.match(errors[0]!.message, /^not valid JSON: /, text);
    assert.match(errors[0]!.message, message, text);
  }
});

test('JSON: string escapes are decoded', () => {
  const entries = entriesOf(parseJson('[{"petId": 1, "quantity": 1, "status": "so\\u006cd"}, {"petId": 2, "quantity": 1, "status": "pe\\u006Eding"}]'));
  assert.deepEqual(
    entries.map((e) => e.item.status),
    ['sold', 'pending'],
  );
});

test('JSON: an empty array holds no entries', () => {
  assert.deepEqual(entriesOf(parseJson(' [ ] \n')), []);
});

// --- Formats -------------------------------------------------------------------------------

test('the format comes from the extension, whatever its case', () => {
  assert.equal(importFormatFromPath('pets.csv'), 'csv');
  assert.equal(importFormatFromPath('dir.json/PETS.JSON'), 'json');
  assert.equal(importFormatFromPath('pets.txt'), undefined);
  assert.equal(importFormatFromPath('csv'), undefined);
});
