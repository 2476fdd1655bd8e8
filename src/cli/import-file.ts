import { INT64_MAX, INT64_MIN, tryParsePetId } from '../domain/pet-id.js';
import type { InventoryItem, PetStatus } from '../schemas/inventory.js';
import { PET_STATUSES, QUANTITY_MAX, QUANTITY_MIN } from '../schemas/values.js';

/**
 * Parsing of `pets import` files (CSV or JSON) into inventory entries, or into the list of every
 * problem found (up to MAX_IMPORT_ERRORS), each naming its line and field. Pure: no store, no I/O.
 */

export const IMPORT_FORMATS = ['csv', 'json'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

/** Larger files are refused before reading: split them. */
export const MAX_IMPORT_BYTES = 50 * 1024 * 1024;

/** Problems reported before parsing stops; a file with more is cut short (`truncated`). */
export const MAX_IMPORT_ERRORS = 20;

/** The only header a CSV file may have. */
export const CSV_HEADER = 'petId,quantity,status';

/** Where something is in the file: its line, and for JSON its 1-based position in the array. */
export interface Location {
  line: number;
  index?: number;
}

export interface ImportError extends Location {
  /** The entry's field the problem is in, when it is in one. */
  field?: string;
  message: string;
}

export interface ImportEntry extends Location {
  item: InventoryItem;
}

export type ImportResult = { ok: true; entries: ImportEntry[] } | { ok: false; errors: ImportError[]; truncated: boolean };

export type Field = keyof InventoryItem;
const FIELD_NAMES: readonly Field[] = ['petId', 'quantity', 'status'];

/** How each field is written and checked; `pets add` uses the same rules for its options. */
export const ITEM_FIELDS: { [K in Field]: { rule: string; parse: (text: string) => InventoryItem[K] | undefined } } = {
  petId: {
    rule: `a decimal integer from ${INT64_MIN} to ${INT64_MAX}, without leading zeros or a plus sign`,
    parse: tryParsePetId,
  },
  quantity: { rule: `an integer from ${QUANTITY_MIN} to ${QUANTITY_MAX}`, parse: parseQuantityText },
  status: { rule: `one of ${PET_STATUSES.join(', ')}`, parse: parseStatusText },
};

/** "line 4" for CSV, "item 3 (line 7)" for JSON. */
export function describeLocation(at: Location): string {
  return at.index === undefined ? `line ${at.line}` : `item ${at.index} (line ${at.line})`;
}

export function formatImportError(error: ImportError): string {
  return `${describeLocation(error)}: ${error.message}`;
}

/** "csv" or "json" from a file name's extension; undefined for any other. */
export function importFormatFromPath(path: string): ImportFormat | undefined {
  const ext = /\.([a-z]+)$/i.exec(path)?.[1]?.toLowerCase();
  return (IMPORT_FORMATS as readonly string[]).includes(ext ?? '') ? (ext as ImportFormat) : undefined;
}

/** "<name> must be <rule> (got <shown>)", with the offending text cut to a readable length. */
export function invalidValueMessage(name: string, rule: string, got: string): string {
  return `${name} must be ${rule} (got ${got})`;
}

/** Quotes text from the file for a message, cut short when long. */
export function quoteForMessage(text: string): string {
  return JSON.stringify(clip(text));
}

export function parseImportFile(text: string, format: ImportFormat): ImportResult {
  return format === 'csv' ? parseCsv(text) : parseJson(text);
}

/** Canonical decimal in QUANTITY_MIN..QUANTITY_MAX: the one form every input of quantity accepts. */
export function parseQuantityText(text: string): number | undefined {
  if (!/^(0|[1-9][0-9]{0,9})$/.test(text)) return undefined;
  const value = Number(text);
  return value >= QUANTITY_MIN && value <= QUANTITY_MAX ? value : undefined;
}

export function parseStatusText(text: string): PetStatus | undefined {
  return (PET_STATUSES as readonly string[]).includes(text) ? (text as PetStatus) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Shared by both formats: field checks, duplicate petIds, the error cap.

/** A field's value as found in the file: `text` to check, or undefined when it has the wrong JSON type. */
interface RawField {
  text: string | undefined;
  /** How the value is shown in a message. */
  got: string;
  /** Why `text` is undefined, such as "a number, not a string". */
  wrongType?: string;
}

/** Collects entries and problems; stops taking problems once more than MAX_IMPORT_ERRORS are found. */
class Collector {
  readonly entries: ImportEntry[] = [];
  readonly errors: ImportError[] = [];
  truncated = false;
  readonly #seen = new Map<bigint, Location>();

  get full(): boolean {
    return this.truncated;
  }

  fail(at: Location, message: string, field?: string): void {
    if (this.errors.length === MAX_IMPORT_ERRORS) {
      this.truncated = true;
      return;
    }
    this.errors.push(field === undefined ? { ...at, message } : { ...at, field, message });
  }

  /** Checks every field of one entry; records the entry, or its problems. */
  add(at: Location, raw: Partial<Record<Field, RawField>>, fieldAt: (field: Field) => Location = () => at): void {
    const petId = this.#field('petId', raw.petId, at, fieldAt);
    const quantity = this.#field('quantity', raw.quantity, at, fieldAt);
    const status = this.#field('status', raw.status, at, fieldAt);
    if (petId === undefined) return;
    const first = this.#seen.get(petId);
    if (first) {
      this.fail(fieldAt('petId'), `duplicate petId ${petId}, also at ${describeLocation(first)}`, 'petId');
      return;
    }
    this.#seen.set(petId, at);
    if (quantity !== undefined && status !== undefined) this.entries.push({ ...at, item: { petId, quantity, status } });
  }

  result(): ImportResult {
    return this.errors.length === 0 ? { ok: true, entries: this.entries } : { ok: false, errors: this.errors, truncated: this.truncated };
  }

  #field<K extends Field>(field: K, raw: RawField | undefined, at: Location, fieldAt: (field: Field) => Location): InventoryItem[K] | undefined {
    if (raw === undefined) {
      this.fail(at, `${field} is missing`, field);
      return undefined;
    }
    const { rule, parse } = ITEM_FIELDS[field];
    const value = raw.text === undefined ? undefined : parse(raw.text);
    if (value !== undefined) return value;
    const message = raw.wrongType ? `${field} must be ${raw.wrongType} (got ${raw.got})` : invalidValueMessage(field, rule, raw.got);
    this.fail(fieldAt(field), message, field);
    return undefined;
  }
}

const MESSAGE_TEXT_MAX = 40;

function clip(text: string): string {
  return text.length > MESSAGE_TEXT_MAX ? `${text.slice(0, MESSAGE_TEXT_MAX)}…` : text;
}

function stripBom(text: string): string {
  return text.startsWith('\uFEFF') ? text.slice(1) : text;
}

// ---------------------------------------------------------------------------------------------
// CSV: header `petId,quantity,status`, one entry per line.

export function parseCsv(text: string): ImportResult {
  const out = new Collector();
  let headerSeen = false;
  const lines = stripBom(text).split('\n');
  for (let i = 0; i < lines.length && !out.full; i++) {
    const line = lines[i]!.endsWith('\r') ? lines[i]!.slice(0, -1) : lines[i]!;
    const at = { line: i + 1 };
    if (line.trim() === '') continue;
    const cells = splitCsvLine(line);
    if (typeof cells === 'string') {
      out.fail(at, cells);
      if (!headerSeen) break;
      continue;
    }
    if (!headerSeen) {
      if (cells.length !== FIELD_NAMES.length || cells.some((cell, i) => cell !== FIELD_NAMES[i])) {
        out.fail(at, `the header must be exactly ${CSV_HEADER} (got ${quoteForMessage(line)})`);
        break;
      }
      headerSeen = true;
      continue;
    }
    if (cells.length !== FIELD_NAMES.length) {
      out.fail(at, `expected ${FIELD_NAMES.length} cells (${CSV_HEADER}), found ${cells.length}`);
      continue;
    }
    const [petId, quantity, status] = cells.map((cell): RawField => ({ text: cell, got: quoteForMessage(cell) }));
    out.add(at, { petId, quantity, status });
  }
  return out.result();
}

/** The cells of one line, trimmed; a cell may be quoted ("a ""b"""). A string is the problem found. */
function splitCsvLine(line: string): string[] | string {
  const cells: string[] = [];
  let i = 0;
  for (;;) {
    while (line[i] === ' ' || line[i] === '\t') i++;
    if (line[i] === '"') {
      let value = '';
      for (i++; ; ) {
        const close = line.indexOf('"', i);
        if (close < 0) return 'a quoted cell has no closing quote';
        value += line.slice(i, close);
        i = close + 1;
        if (line[i] !== '"') break;
        value += '"';
        i++;
      }
      while (line[i] === ' ' || line[i] === '\t') i++;
      if (i < line.length && line[i] !== ',') return 'unexpected text after a quoted cell';
      cells.push(value);
    } else {
      const comma = line.indexOf(',', i);
      const end = comma < 0 ? line.length : comma;
      cells.push(line.slice(i, end).trim());
      i = end;
    }
    if (i >= line.length) return cells;
    i++; // the comma
  }
}

// ---------------------------------------------------------------------------------------------
// JSON: an array of {"petId", "quantity", "status"} objects. Parsed here rather than with
// JSON.parse, which would round petIds above 2^53 and forget line numbers.

type JsonNode =
  | { kind: 'array'; line: number; items: JsonNode[] }
  | { kind: 'object'; line: number; members: JsonMember[] }
  | { kind: 'string'; line: number; value: string; source: string }
  | { kind: 'number' | 'boolean' | 'null'; line: number; source: string };

interface JsonMember {
  key: string;
  value: JsonNode;
}

const KIND_NAMES: Record<JsonNode['kind'], string> = {
  array: 'an array',
  object: 'an object',
  string: 'a string',
  number: 'a number',
  boolean: 'a boolean',
  null: 'null',
};

/** The JSON type each field must have. */
const FIELD_KINDS: Record<Field, JsonNode['kind']> = { petId: 'number', quantity: 'number', status: 'string' };

export function parseJson(text: string): ImportResult {
  const out = new Collector();
  let root: JsonNode;
  try {
    root = new JsonReader(stripBom(text)).document();
  } catch (err) {
    if (!(err instanceof JsonSyntaxError)) throw err;
    out.fail({ line: err.line }, `not valid JSON: ${err.message}`);
    return out.result();
  }
  if (root.kind !== 'array') {
    out.fail({ line: root.line }, `the file must hold a JSON array of inventory entries, found ${KIND_NAMES[root.kind]}`);
    return out.result();
  }
  root.items.forEach((node, i) => {
    if (!out.full) addJsonItem(out, node, i + 1);
  });
  return out.result();
}

function addJsonItem(out: Collector, node: JsonNode, index: number): void {
  const at = { line: node.line, index };
  if (node.kind !== 'object') {
    out.fail(at, `an entry must be an object with ${FIELD_NAMES.join(', ')}, found ${KIND_NAMES[node.kind]}`);
    return;
  }
  const raw: Partial<Record<Field, RawField>> = {};
  const lines: Partial<Record<Field, number>> = {};
  const seen = new Set<string>();
  for (const { key, value } of node.members) {
    const field = FIELD_NAMES.find((f) => f === key);
    if (seen.has(key)) {
      out.fail({ line: value.line, index }, `the field ${quoteForMessage(key)} appears twice`, key);
    } else if (field === undefined) {
      out.fail({ line: value.line, index }, `unknown field ${quoteForMessage(key)} (allowed: ${FIELD_NAMES.join(', ')})`, key);
    } else {
      raw[field] = rawJsonField(value, FIELD_KINDS[field]);
      lines[field] = value.line;
    }
    seen.add(key);
  }
  out.add(at, raw, (field) => ({ line: lines[field] ?? node.line, index }));
}

function rawJsonField(node: JsonNode, kind: JsonNode['kind']): RawField {
  const wrongType = `${KIND_NAMES[kind]}, not ${KIND_NAMES[node.kind]}`;
  if (node.kind === 'array' || node.kind === 'object') return { text: undefined, got: node.kind === 'array' ? '[…]' : '{…}', wrongType };
  const got = clip(node.source);
  if (node.kind !== kind) return { text: undefined, got, wrongType };
  return { text: node.kind === 'string' ? node.value : node.source, got };
}

class JsonSyntaxError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
    this.name = 'JsonSyntaxError';
  }
}

/** Nesting deeper than this is refused rather than risking the call stack; entries need 2. */
const MAX_JSON_DEPTH = 64;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
// eslint-disable-next-line no-control-regex -- JSON strings may not hold raw control characters.
const PLAIN_STRING_RUN = /[^"\\\u0000-\u001f]*/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** A recursive-descent JSON reader (RFC 8259) that keeps numbers as their source text and tracks lines. */
class JsonReader {
  #pos = 0;
  #line = 1;

  constructor(readonly text: string) {}

  document(): JsonNode {
    const value = this.#value(0);
    this.#skipSpace();
    if (this.#pos < this.text.length) this.#fail('unexpected text after the end of the JSON value');
    return value;
  }

  #value(depth: number): JsonNode {
    this.#skipSpace();
    const line = this.#line;
    const ch = this.text[this.#pos];
    if (ch === '[' || ch === '{') {
      if (depth >= MAX_JSON_DEPTH) this.#fail(`nested more than ${MAX_JSON_DEPTH} levels deep`);
      return ch === '[' ? this.#array(line, depth) : this.#object(line, depth);
    }
    if (ch === '"') {
      const start = this.#pos;
      const value = this.#string();
      return { kind: 'string', line, value, source: this.text.slice(start, this.#pos) };
    }
    for (const [word, kind] of [['true', 'boolean'], ['false', 'boolean'], ['null', 'null']] as const) {
      if (this.text.startsWith(word, this.#pos)) {
        this.#pos += word.length;
        return { kind, line, source: word };
      }
    }
    NUMBER.lastIndex = this.#pos;
    const number = NUMBER.exec(this.text);
    if (number) {
      this.#pos += number[0].length;
      return { kind: 'number', line, source: number[0] };
    }
    return this.#fail(`expected a value, found ${this.#found()}`);
  }

  #array(line: number, depth: number): JsonNode {
    this.#pos++; // [
    const items: JsonNode[] = [];
    if (this.#take(']')) return { kind: 'array', line, items };
    do items.push(this.#value(depth + 1));
    while (this.#take(','));
    if (!this.#take(']')) this.#fail(`expected "," or "]" in an array, found ${this.#found()}`);
    return { kind: 'array', line, items };
  }

  #object(line: number, depth: number): JsonNode {
    this.#pos++; // {
    const members: JsonMember[] = [];
    if (this.#take('}')) return { kind: 'object', line, members };
    do {
      this.#skipSpace();
      if (this.text[this.#pos] !== '"') this.#fail(`expected a field name in double quotes, found ${this.#found()}`);
      const key = this.#string();
      if (!this.#take(':')) this.#fail(`expected ":" after a field name, found ${this.#found()}`);
      members.push({ key, value: this.#value(depth + 1) });
    } while (this.#take(','));
    if (!this.#take('}')) this.#fail(`expected "," or "}" in an object, found ${this.#found()}`);
    return { kind: 'object', line, members };
  }

  /** Reads a string starting at its opening quote; returns its value. */
  #string(): string {
    this.#pos++; // "
    let value = '';
    for (;;) {
      PLAIN_STRING_RUN.lastIndex = this.#pos;
      const run = PLAIN_STRING_RUN.exec(this.text)![0];
      value += run;
      this.#pos += run.length;
      const ch = this.text[this.#pos];
      if (ch === '"') {
        this.#pos++;
        return value;
      }
      if (ch === undefined) this.#fail('a string is not closed before the end of the file');
      if (ch !== '\\') this.#fail('a string holds a raw control character (such as a line break); escape it');
      const esc = this.text[this.#pos + 1] ?? '';
      if (esc === 'u') {
        const hex = this.text.slice(this.#pos + 2, this.#pos + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.#fail('a \\u escape needs four hex digits');
        value += String.fromCharCode(parseInt(hex, 16));
        this.#pos += 6;
      } else {
        const decoded = ESCAPES[esc];
        if (decoded === undefined) this.#fail(`unknown escape \\${esc} in a string`);
        value += decoded;
        this.#pos += 2;
      }
    }
  }

  /** Skips white space, then consumes `ch` if it is next. */
  #take(ch: string): boolean {
    this.#skipSpace();
    if (this.text[this.#pos] !== ch) return false;
    this.#pos++;
    return true;
  }

  #skipSpace(): void {
    for (;;) {
      const ch = this.text[this.#pos];
      if (ch === '\n') this.#line++;
      else if (ch !== ' ' && ch !== '\t' && ch !== '\r') return;
      this.#pos++;
    }
  }

  #found(): string {
    const ch = this.text[this.#pos];
    return ch === undefined ? 'the end of the file' : JSON.stringify(ch);
  }

  #fail(message: string): never {
    throw new JsonSyntaxError(this.#line, message);
  }
}
