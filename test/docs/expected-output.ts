/**
 * How the output a document shows is compared with what a command printed. In what a document
 * shows, `...` stands for any text (an id, a key, a time it cannot know) and an RFC 3339 time for
 * any such time; everything else must be there exactly.
 */

const TIMESTAMP = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/;

/** The shown text as an anchored regular expression. */
export function shownPattern(shown: string): RegExp {
  const parts = shown.split(/(\.\.\.|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)/);
  const source = parts
    .map((part, i) => {
      if (i % 2 === 0) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      return part === '...' ? '[\\s\\S]*?' : TIMESTAMP.source;
    })
    .join('');
  return new RegExp(`^${source}$`);
}

/** Whether `actual` is what `shown` shows. */
export function matchesShown(shown: string, actual: string): boolean {
  return shownPattern(shown).test(actual);
}

/** What curl received, read from its dumped headers and its standard output. */
export interface HttpAnswer {
  /** `HTTP/1.1 200 OK`. */
  statusLine: string;
  status: number;
  /** Header names in lower case, values as sent. */
  headers: Map<string, string>;
  body: string;
}

/** The last response in a file curl wrote with --dump-header (a 100 Continue may come first), with the body from its stdout. */
export function httpAnswer(dumpedHeaders: string, stdout: string): HttpAnswer {
  const blocks = dumpedHeaders.split(/\r?\n\r?\n/).filter((b) => b.trim() !== '');
  const lines = (blocks.at(-1) ?? '').split(/\r?\n/);
  const statusLine = lines[0] ?? '';
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  // With -i the headers come first on stdout too; the body is what follows them.
  const body = stdout.startsWith('HTTP/') ? stdout.slice(stdout.search(/\r?\n\r?\n/)).replace(/^\r?\n\r?\n/, '') : stdout;
  return { statusLine, status: Number(/^HTTP\/[\d.]+ (\d{3})/.exec(statusLine)?.[1] ?? 0), headers, body };
}

/**
 * What differs between the lines a document shows under a curl command and the answer, or undefined.
 * The lines are either `HTTP/1.1 200 OK`, then some of the headers (`name: value`), then the body;
 * or the body alone, after its status when it is not 200 (`404 {"code":...}`). A body may run over
 * several lines, each after the first indented. Nothing shown: any status below 400 will do.
 */
export function httpDifference(shown: string[], answer: HttpAnswer): string | undefined {
  if (shown.length === 0) return answer.status < 400 ? undefined : `status ${answer.status}, and the document shows no error`;
  let rest = shown;
  let status = 200;
  const problems: string[] = [];
  if (rest[0]!.startsWith('HTTP/')) {
    if (!matchesShown(rest[0]!, answer.statusLine)) problems.push(`status line "${answer.statusLine}", shown "${rest[0]}"`);
    status = answer.status;
    rest = rest.slice(1);
    while (rest.length > 0 && /^[A-Za-z][A-Za-z0-9-]*: /.test(rest[0]!)) {
      const [name, ...value] = rest[0]!.split(': ');
      const actual = answer.headers.get(name!.toLowerCase());
      if (actual === undefined || !matchesShown(value.join(': '), actual)) problems.push(`header ${name}: ${actual ?? '(absent)'}, shown "${rest[0]}"`);
      rest = rest.slice(1);
    }
  } else {
    const withStatus = /^(\d{3}) (.*)$/.exec(rest[0]!);
    if (withStatus) {
      status = Number(withStatus[1]);
      rest = [withStatus[2]!, ...rest.slice(1)];
    }
  }
  if (answer.status !== status) problems.push(`status ${answer.status}, shown ${status}`);
  if (rest.length > 0) {
    const body = rest.map((line, i) => (i === 0 ? line : line.trimStart())).join('');
    // A terminal shows a body with or without a final newline the same.
    if (!matchesShown(body, answer.body.replace(/\n$/, ''))) problems.push(`body\n  ${answer.body}\nshown\n  ${body}`);
  }
  return problems.length === 0 ? undefined : problems.join('\n');
}
