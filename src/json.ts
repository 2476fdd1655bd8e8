/**
 * JSON text for values that may hold bigint (int64 ids): a bigint is written as its exact
 * digits, which JSON.stringify refuses and a float would round above 2^53. Everything else is
 * written as JSON.stringify would (toJSON honoured, undefined members left out).
 */
export function stringifyJson(value: unknown): string {
  return write(value) ?? 'null';
}

function write(value: unknown): string | undefined {
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return write((value as { toJSON: () => unknown }).toJSON());
  if (Array.isArray(value)) return `[${value.map((v) => write(v) ?? 'null').join(',')}]`;
  const members: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    const text = write(v);
    if (text !== undefined) members.push(`${JSON.stringify(key)}:${text}`);
  }
  return `{${members.join(',')}}`;
}

/**
 * `parsed` (what JSON.parse read from `text`), except that an integer literal beyond
 * Number.MAX_SAFE_INTEGER is a bigint with every digit (an int64 petId in a body), where JSON.parse
 * rounded it to a double. `text` must be valid JSON nested at most a few dozen levels (the body
 * parser checks both first): this walk reports no syntax errors of its own.
 */
export function exactIntegers(text: string, parsed: unknown): unknown {
  // No run of 16 digits, no integer beyond 2^53: JSON.parse read the text exactly.
  if (!/\d{16}/.test(text)) return parsed;
  return new ExactReader(text).value();
}

const WHITESPACE = /[ \t\n\r]*/y;
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
const STRING = /"(?:[^"\\]|\\.)*"/y;

/** A recursive-descent reader of valid JSON; its depth is the body's, which the caller bounded. */
class ExactReader {
  #at = 0;
  constructor(readonly text: string) {}

  value(): unknown {
    this.#skip();
    const c = this.text[this.#at];
    if (c === '{') return this.#object();
    if (c === '[') return this.#array();
    if (c === '"') return this.#string();
    if (c === 't' || c === 'f' || c === 'n') {
      const word = c === 't' ? 'true' : c === 'f' ? 'false' : 'null';
      this.#at += word.length;
      return JSON.parse(word);
    }
    NUMBER.lastIndex = this.#at;
    const found = NUMBER.exec(this.text)!;
    this.#at = NUMBER.lastIndex;
    const number = Number(found[0]);
    const integer = found[1] === undefined && found[2] === undefined;
    return integer && !Number.isSafeInteger(number) ? BigInt(found[0]) : number;
  }

  #object(): Record<string, unknown> {
    this.#at++;
    const members: [string, unknown][] = [];
    while (this.#next() !== '}') {
      const key = this.#string();
      this.#next(); // the colon
      this.#at++;
      members.push([key, this.value()]);
      if (this.#next() === ',') this.#at++;
    }
    this.#at++;
    // fromEntries defines own properties, as JSON.parse does: "__proto__" stays a key (and is refused), never a prototype.
    return Object.fromEntries(members);
  }

  #array(): unknown[] {
    this.#at++;
    const items: unknown[] = [];
    while (this.#next() !== ']') {
      items.push(this.value());
      if (this.#next() === ',') this.#at++;
    }
    this.#at++;
    return items;
  }

  #string(): string {
    this.#skip();
    STRING.lastIndex = this.#at;
    const found = STRING.exec(this.text)!;
    this.#at = STRING.lastIndex;
    return JSON.parse(found[0]) as string;
  }

  /** The next character after whitespace. */
  #next(): string | undefined {
    this.#skip();
    return this.text[this.#at];
  }

  #skip(): void {
    WHITESPACE.lastIndex = this.#at;
    WHITESPACE.exec(this.text);
    this.#at = WHITESPACE.lastIndex;
  }
}
