/**
 * The Markdown of the OpenAPI document's descriptions as HTML, for the reference page's first view:
 * the CommonMark the document uses (paragraphs, ATX headings, bullet lists, GFM tables, code spans,
 * backslash escapes), every other character as text. No raw HTML passes: whatever a description
 * holds, the result holds no tag but the ones made here.
 */

/** Text as HTML text or attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Markdown as HTML, its headings shifted down by `headingOffset` levels (a description's "##" under the page's own h1). */
export function markdownHtml(markdown: string, headingOffset = 0): string {
  return blocks(markdown)
    .map((lines) => block(lines, headingOffset))
    .join('\n');
}

/** The blocks of the text: runs of lines between blank lines. */
function blocks(markdown: string): string[][] {
  const out: string[][] = [];
  let current: string[] = [];
  for (const line of markdown.replace(/\r\n?/g, '\n').split('\n')) {
    if (line.trim() === '') {
      if (current.length > 0) out.push(current);
      current = [];
    } else {
      current.push(line);
    }
  }
  if (current.length > 0) out.push(current);
  return out;
}

function block(lines: string[], headingOffset: number): string {
  const heading = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/.exec(lines[0]!);
  if (heading && lines.length === 1) {
    const level = Math.min(6, heading[1]!.length + headingOffset);
    return `<h${level}>${inline(heading[2]!)}</h${level}>`;
  }
  if (lines.length >= 2 && lines.every((l) => l.trim().startsWith('|')) && /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/.test(lines[1]!)) return table(lines);
  if (lines.every((l) => /^\s*[-*+]\s+/.test(l))) return `<ul>${lines.map((l) => `<li>${inline(l.replace(/^\s*[-*+]\s+/, ''))}</li>`).join('')}</ul>`;
  return `<p>${inline(lines.map((l) => l.trim()).join(' '))}</p>`;
}

/** A GFM table: a header row, the delimiter row, body rows; `\|` is a pipe inside a cell. */
function table(lines: string[]): string {
  const cells = (line: string) =>
    line
      .trim()
      .replace(/^\||\|$/g, '')
      .split(/(?<!\\)\|/)
      .map((cell) => inline(cell.trim().replaceAll('\\|', '|')));
  const [head, , ...body] = lines;
  const header = cells(head!);
  const rows = body.map((line) => `<tr>${cells(line).map((c) => `<td>${c}</td>`).join('')}</tr>`);
  return `<table><thead><tr>${header.map((c) => `<th scope="col">${c}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/** Code spans and backslash escapes; everything else is text. */
function inline(text: string): string {
  let html = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length && /[!-/:-@[-`{-~]/.test(text[i + 1]!)) {
      html += escapeHtml(text[i + 1]!);
      i += 2;
    } else if (c === '`') {
      const ticks = /^`+/.exec(text.slice(i))![0];
      const end = text.indexOf(ticks, i + ticks.length);
      if (end < 0) {
        html += escapeHtml(ticks);
        i += ticks.length;
      } else {
        html += `<code>${escapeHtml(text.slice(i + ticks.length, end).replace(/^ (.*) $/, '$1'))}</code>`;
        i = end + ticks.length;
      }
    } else {
      html += escapeHtml(c);
      i += 1;
    }
  }
  return html;
}
