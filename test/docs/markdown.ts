import { readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

/** The repository root: the docs' relative links and the examples' working tree start here. */
export const ROOT = resolve(import.meta.dirname, '..', '..');

/** The documents whose examples and links are checked: the front page, the developers' guide and every page of docs/. */
export function documentPaths(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join('docs', name));
  return ['README.md', 'DEVELOPERS.md', ...docs];
}

/** A fenced code block of a document. */
export interface CodeBlock {
  /** The document, relative to the repository root. */
  file: string;
  /** The line of the opening fence, counted from 1. */
  line: number;
  /** The fence's language, the info string's first word ('' when there is none). */
  language: string;
  /** The rest of the info string: `no-run: why`, `postgres`, or nothing. */
  mode: string;
  /** The block's lines, without the fences and the fence's indentation. */
  lines: string[];
}

/** Every fenced block of a Markdown text, indented ones (inside a list item) included. */
export function codeBlocks(file: string, text: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)```(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const [language = '', ...rest] = open[2]!.trim().split(/\s+/);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^ *```\s*$/.test(lines[j]!); j++) body.push(lines[j]!.slice(Math.min(indent, lines[j]!.search(/\S|$/))));
    blocks.push({ file, line: i + 1, language, mode: rest.join(' '), lines: body });
    i = j;
  }
  return blocks;
}

/** One command of a shell example, with the output the document shows for it. */
export interface Step {
  /** The command as written, continuation lines joined with their backslashes and newlines. */
  command: string;
  /** The `# ` lines right below the command, without the `# `: what it prints. Empty when none is shown. */
  expected: string[];
  /** The line of the command in the document. */
  line: number;
}

/**
 * The commands of a shell block, each with the output shown for it: the comment lines directly below
 * a command (no blank line between) show what it prints; a comment after a blank line says what
 * comes next and is not compared.
 */
export function steps(block: CodeBlock): Step[] {
  const found: Step[] = [];
  let current: Step | undefined;
  for (let i = 0; i < block.lines.length; i++) {
    const text = block.lines[i]!;
    const line = block.line + 1 + i;
    if (text.trim() === '') {
      current = undefined;
    } else if (text.startsWith('#')) {
      current?.expected.push(text.replace(/^# ?/, ''));
    } else {
      let command = text;
      while (command.endsWith('\\') && i + 1 < block.lines.length) command += `\n${block.lines[++i]!}`;
      current = { command, expected: [], line };
      found.push(current);
    }
  }
  return found;
}

/** A relative link of a document: where it points and the line it is on. */
export interface Link {
  file: string;
  line: number;
  target: string;
}

/** The relative links of a Markdown text (`[text](target)` and `![alt](target)`), outside code blocks and code spans. */
export function relativeLinks(file: string, text: string): Link[] {
  const links: Link[] = [];
  let inFence = false;
  text.split('\n').forEach((raw, i) => {
    if (/^ *```/.test(raw)) inFence = !inFence;
    if (inFence) return;
    const line = raw.replace(/`[^`]*`/g, '');
    for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push({ file, line: i + 1, target });
    }
  });
  return links;
}

/** The anchor GitHub makes of one heading's text (before repeats are numbered). */
export function headingSlug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors GitHub makes of a document's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let inFence = false;
  for (const line of text.split('\n')) {
    if (/^ *```/.test(line)) inFence = !inFence;
    const heading = !inFence && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = headingSlug(heading[1]!);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** The path of a link target relative to the repository root, as the link's document resolves it. */
export function resolveLink(link: Link): { path: string; anchor: string | undefined } {
  const [pathPart = '', anchor] = link.target.split('#');
  const path = pathPart === '' ? link.file : relative(ROOT, resolve(ROOT, link.file, '..', decodeURIComponent(pathPart)));
  return { path, anchor };
}
