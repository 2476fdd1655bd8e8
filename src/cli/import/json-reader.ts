import { tryParsePetId } from '../../domain/pet-id.js';
import type { PetStatus } from '../../schemas/inventory.js';
import { checkEntry, clip, FIELD_NAMES, parseQuantityText, quoteForMessage, type Field, type RawField } from './fields.js';
import type { FormatReader, ReadSink } from './reader.js';

/**
 * JSON: an array of {"petId", "quantity", "status"} objects, read as it comes. Parsed here rather
 * than with JSON.parse, which would need the whole text, round petIds above 2^53 and forget line
 * numbers. Only the entry being read is held: an entry cut by the end of a piece is read again,
 * whole, once the next piece has come.
 */

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

/** Nesting deeper than this is refused rather than risking the call stack; entries need 2. */
const MAX_JSON_DEPTH = 64;
/** An entry longer than this is refused: no entry comes near, and a reader must not hold a file's worth of one. */
export const MAX_ENTRY_CHARS = 1024 * 1024;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
/** What a number may be made of, to tell whether one goes on past the end of a piece. */
const NUMBER_CHARS = /[-+.eE0-9]*/y;
// eslint-disable-next-line no-control-regex -- JSON strings may not hold raw control characters.
const PLAIN_STRING_RUN = /[^"\\\u0000-\u001f]*/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** The form `pets export` writes an entry in; numbers must be canonical still, which the field rules check. */
const EXPORTED_ENTRY = /\{"petId":(-?[0-9]{1,20}),"quantity":([0-9]{1,10}),"status":"(available|pending|sold)"\}/y;

/** Thrown when the text ends inside something that more text may complete; made once, as it is thrown at the end of every piece. */
const NEED_MORE = new Error('more text is needed');

class JsonSyntaxError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
    this.name = 'JsonSyntaxError';
  }
}

/** Where the reader is in the array. */
type State = 'start' | 'first' | 'element' | 'next' | 'after' | 'stopped';

export function jsonReader(sink: ReadSink): FormatReader {
  let text = '';
  let pos = 0;
  let line = 1;
  let final = false;
  let state: State = 'start';
  let index = 0;

  const fail = (message: string, at = line): never => {
    throw new JsonSyntaxError(at, message);
  };
  /** The character at `pos`; at the end of the text, undefined once the file has ended, else more text is needed. */
  const peek = (): string | undefined => {
    if (pos < text.length) return text[pos];
    if (!final) throw NEED_MORE;
    return undefined;
  };
  const found = (): string => {
    const ch = peek();
    return ch === undefined ? 'the end of the file' : JSON.stringify(ch);
  };
  const skipSpace = (): void => {
    for (;;) {
      const ch = peek();
      if (ch === '\n') line++;
      else if (ch !== ' ' && ch !== '\t' && ch !== '\r') return;
      pos++;
    }
  };
  /** Skips white space, then consumes `ch` if it is next. */
  const take = (ch: string): boolean => {
    skipSpace();
    if (peek() !== ch) return false;
    pos++;
    return true;
  };

  const value = (depth: number): JsonNode => {
    skipSpace();
    const at = line;
    const ch = peek();
    if (ch === '[' || ch === '{') {
      if (depth >= MAX_JSON_DEPTH) fail(`nested more than ${MAX_JSON_DEPTH} levels deep`);
      return ch === '[' ? array(at, depth) : object(at, depth);
    }
    if (ch === '"') {
      const start = pos;
      const decoded = string();
      return { kind: 'string', line: at, value: decoded, source: text.slice(start, pos) };
    }
    for (const [word, kind] of [['true', 'boolean'], ['false', 'boolean'], ['null', 'null']] as const) {
      if (text.startsWith(word, pos)) {
        pos += word.length;
        return { kind, line: at, source: word };
      }
      // "tru" at the end of a piece may be "true" once the next one comes.
      if (!final && pos + word.length > text.length && word.startsWith(text.slice(pos))) throw NEED_MORE;
    }
    // A number that reaches the end of a piece ("-", "12", "1.", "1e+") may go on in the next.
    if (!final && (ch === '-' || (ch! >= '0' && ch! <= '9'))) {
      NUMBER_CHARS.lastIndex = pos;
      if (pos + NUMBER_CHARS.exec(text)![0].length === text.length) throw NEED_MORE;
    }
    NUMBER.lastIndex = pos;
    const number = NUMBER.exec(text);
    if (number) {
      pos += number[0].length;
      return { kind: 'number', line: at, source: number[0] };
    }
    return fail(`expected a value, found ${found()}`);
  };

  const array = (at: number, depth: number): JsonNode => {
    pos++; // [
    const items: JsonNode[] = [];
    if (take(']')) return { kind: 'array', line: at, items };
    do items.push(value(depth + 1));
    while (take(','));
    if (!take(']')) fail(`expected "," or "]" in an array, found ${found()}`);
    return { kind: 'array', line: at, items };
  };

  const object = (at: number, depth: number): JsonNode => {
    pos++; // {
    const members: JsonMember[] = [];
    if (take('}')) return { kind: 'object', line: at, members };
    do {
      skipSpace();
      if (peek() !== '"') fail(`expected a field name in double quotes, found ${found()}`);
      const key = string();
      if (!take(':')) fail(`expected ":" after a field name, found ${found()}`);
      members.push({ key, value: value(depth + 1) });
    } while (take(','));
    if (!take('}')) fail(`expected "," or "}" in an object, found ${found()}`);
    return { kind: 'object', line: at, members };
  };

  /** Reads a string starting at its opening quote; returns its value. */
  const string = (): string => {
    pos++; // "
    let decoded = '';
    for (;;) {
      PLAIN_STRING_RUN.lastIndex = pos;
      const run = PLAIN_STRING_RUN.exec(text)![0];
      decoded += run;
      pos += run.length;
      const ch = peek();
      if (ch === '"') {
        pos++;
        return decoded;
      }
      if (ch === undefined) fail('a string is not closed before the end of the file');
      if (ch !== '\\') fail('a string holds a raw control character (such as a line break); escape it');
      if (!final && pos + 6 > text.length) throw NEED_MORE;
      const esc = text[pos + 1] ?? '';
      if (esc === 'u') {
        const hex = text.slice(pos + 2, pos + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('a \\u escape needs four hex digits');
        decoded += String.fromCharCode(parseInt(hex, 16));
        pos += 6;
      } else {
        const escaped = ESCAPES[esc];
        if (escaped === undefined) fail(`unknown escape \\${esc} in a string`);
        decoded += escaped;
        pos += 2;
      }
    }
  };

  /** The next element of the array, checked and handed to the sink. */
  const element = (): void => {
    if (exportedEntry()) return;
    const node = value(1);
    index++;
    const at = { line: node.line, index };
    if (node.kind !== 'object') {
      sink.refused([{ ...at, message: `an entry must be an object with ${FIELD_NAMES.join(', ')}, found ${KIND_NAMES[node.kind]}` }]);
      return;
    }
    const raw: Partial<Record<Field, RawField>> = {};
    const lines: Partial<Record<Field, number>> = {};
    const problems: { line: number; index: number; field: string; message: string }[] = [];
    const seen = new Set<string>();
    for (const { key, value: member } of node.members) {
      const field = FIELD_NAMES.find((f) => f === key);
      if (seen.has(key)) {
        problems.push({ line: member.line, index, field: key, message: `the field ${quoteForMessage(key)} appears twice` });
      } else if (field === undefined) {
        problems.push({ line: member.line, index, field: key, message: `unknown field ${quoteForMessage(key)} (allowed: ${FIELD_NAMES.join(', ')})` });
      } else {
        raw[field] = rawField(member, FIELD_KINDS[field]);
        lines[field] = member.line;
      }
      seen.add(key);
    }
    const checked = checkEntry(at, raw, (field) => ({ line: lines[field] ?? node.line, index }));
    if ('errors' in checked) sink.refused([...problems, ...checked.errors]);
    else if (problems.length > 0) sink.refused(problems);
    else sink.entry({ ...at, item: checked.item });
  };

  /**
   * An entry exactly as `pets export` writes it, read without building its tree: true when it was
   * one, and valid; anything else is read the general way (and a problem described there).
   */
  const exportedEntry = (): boolean => {
    EXPORTED_ENTRY.lastIndex = pos;
    const match = EXPORTED_ENTRY.exec(text);
    if (!match) return false;
    const petId = tryParsePetId(match[1]!);
    const quantity = parseQuantityText(match[2]!);
    if (petId === undefined || quantity === undefined) return false;
    pos += match[0].length;
    index++;
    sink.entry({ line, index, item: { petId, quantity, status: match[3] as PetStatus } });
    return true;
  };

  /** One step of the array; false when the text is used up (or the reader stopped). */
  const step = (): boolean => {
    switch (state) {
      case 'start': {
        skipSpace();
        const ch = peek();
        if (ch === '[') {
          pos++;
          state = 'first';
          return true;
        }
        const root = value(0);
        return stop(root.line, `the file must hold a JSON array of inventory entries, found ${KIND_NAMES[root.kind]}`);
      }
      case 'first':
        if (take(']')) state = 'after';
        else {
          element();
          state = 'next';
        }
        return true;
      case 'element':
        element();
        state = 'next';
        return true;
      case 'next':
        if (take(',')) state = 'element';
        else if (take(']')) state = 'after';
        else fail(`expected "," or "]" in an array, found ${found()}`);
        return true;
      case 'after':
        skipSpace();
        if (peek() === undefined) return false;
        return fail('unexpected text after the end of the JSON value');
      case 'stopped':
        return false;
    }
  };

  const stop = (at: number, message: string): false => {
    state = 'stopped';
    sink.unreadable({ line: at, message });
    return false;
  };

  /** Steps while the text lasts; an element cut short is read again from its start when more text comes. */
  const run = (): void => {
    for (;;) {
      let [startPos, startLine] = [pos, line];
      const startState = state;
      try {
        // White space between steps is consumed for good, so a step cut short starts again at its first character.
        skipSpace();
        [startPos, startLine] = [pos, line];
        if (!step()) break;
      } catch (err) {
        if (err === NEED_MORE) {
          [pos, line, state] = [startPos, startLine, startState];
          if (text.length - pos > MAX_ENTRY_CHARS) stop(line, `an entry is longer than ${MAX_ENTRY_CHARS} characters`);
          break;
        }
        if (!(err instanceof JsonSyntaxError)) throw err;
        stop(err.line, `not valid JSON: ${err.message}`);
        break;
      }
    }
    // What was read is let go; only the entry in progress stays.
    text = text.slice(pos);
    pos = 0;
  };

  return {
    push(piece) {
      if (state === 'stopped') return;
      text += piece;
      run();
    },
    end() {
      if (state === 'stopped') return;
      final = true;
      run();
    },
  };
}

function rawField(node: JsonNode, kind: JsonNode['kind']): RawField {
  const wrongType = `${KIND_NAMES[kind]}, not ${KIND_NAMES[node.kind]}`;
  if (node.kind === 'array' || node.kind === 'object') return { text: undefined, got: node.kind === 'array' ? '[…]' : '{…}', wrongType };
  const got = clip(node.source);
  if (node.kind !== kind) return { text: undefined, got, wrongType };
  return { text: node.kind === 'string' ? node.value : node.source, got };
}
