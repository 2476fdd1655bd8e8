import assert from 'node:assert/strict';
import { test } from 'node:test';
import { markdownHtml } from '../../src/docs-page/markdown.js';

/** The Markdown of the document's descriptions as the reference page's first view shows it. */

test('paragraphs, headings, lists, code spans and backslash escapes', () => {
  assert.equal(markdownHtml('One\nline.\n\n## Two\n\n- a `b`\n- c'), '<p>One line.</p>\n<h2>Two</h2>\n<ul><li>a <code>b</code></li><li>c</li></ul>');
  assert.equal(markdownHtml('send "Bearer \\<key\\>" \\*now\\*'), '<p>send &#34;Bearer &#60;key&#62;&#34; *now*</p>');
  assert.equal(markdownHtml('`"default";q=<requests>` and ``a ` b``'), '<p><code>&#34;default&#34;;q=&#60;requests&#62;</code> and <code>a ` b</code></p>');
  assert.equal(markdownHtml('an ` alone'), '<p>an ` alone</p>');
});

test('a GFM table: header, rows, a pipe escaped inside a cell', () => {
  assert.equal(
    markdownHtml('| Code | Meaning |\n| --- | --- |\n| `a` | x \\| y |'),
    '<table><thead><tr><th scope="col">Code</th><th scope="col">Meaning</th></tr></thead><tbody><tr><td><code>a</code></td><td>x | y</td></tr></tbody></table>',
  );
});

test('no HTML passes: a tag, an entity or an attribute in a description is text', () => {
  const html = markdownHtml('<script>alert(1)</script> <img src=x onerror="y"> &amp; <key>\n\n# <b>t</b>\n\n| <i>a</i> |\n|---|\n| <u>b</u> |');
  assert.doesNotMatch(html.replace(/<\/?(p|h1|table|thead|tbody|tr|th|td)( scope="col")?>/g, ''), /<|>/);
  assert.ok(html.includes('&#60;script&#62;alert(1)&#60;/script&#62;'));
  assert.ok(html.includes('&#38;amp;'));
});
