import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { ROOT } from './markdown.js';

/** A port as one side tells it: its name and its members, in order. */
interface Port {
  name: string;
  members: string[];
}

/** The ports of Store in src/store/store.ts, read with the TypeScript compiler: each property whose type is an interface of that file. */
function portsInCode(): { ports: Port[]; undocumented: string[] } {
  const file = 'src/store/store.ts';
  const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const interfaces = new Map(source.statements.filter(ts.isInterfaceDeclaration).map((declaration) => [declaration.name.text, declaration]));
  const store = interfaces.get('Store');
  assert.ok(store, `${file} declares the Store interface`);
  const ports: Port[] = [];
  const undocumented: string[] = [];
  for (const property of store.members.filter(ts.isPropertySignature)) {
    const type = property.type;
    const port = type && ts.isTypeReferenceNode(type) && ts.isIdentifier(type.typeName) ? interfaces.get(type.typeName.text) : undefined;
    if (!port) continue;
    const name = property.name.getText(source);
    if (ts.getJSDocCommentsAndTags(property).length === 0) undocumented.push(`Store.${name}`);
    const members = port.members.map((member) => member.name?.getText(source) ?? '');
    for (const member of port.members) if (ts.getJSDocCommentsAndTags(member).length === 0) undocumented.push(`${port.name.text}.${member.name?.getText(source)}`);
    ports.push({ name, members });
  }
  return { ports, undocumented };
}

/** The rows of the port table under "The store: narrow ports" in docs/architecture.md: each port, its members, and who asks for it. */
function portsInDocs(): (Port & { askedBy: string })[] {
  const text = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const section = /^## The store: narrow ports\n([\s\S]*?)(?=^## )/m.exec(text)?.[1];
  assert.ok(section, 'docs/architecture.md has the section "The store: narrow ports"');
  const rows = section
    .split('\n')
    .filter((line) => line.startsWith('|'))
    // Every cell, without the outer pipes; the header row and the rule under it are not ports.
    .map((line) => line.slice(1, line.endsWith('|') ? -1 : undefined).split('|').map((cell) => cell.trim()))
    .slice(2);
  assert.ok(rows.length > 0, 'the section has a table of ports');
  const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
  return rows.map(([port = '', members = '', askedBy = ''], i) => {
    const [name] = names(port);
    assert.ok(name !== undefined, `row ${i + 1} names its port in backticks: ${port}`);
    return { name, members: names(members), askedBy };
  });
}

test("docs/architecture.md's port table names every port of Store, in order, with its members, in order, and who asks for each", () => {
  const inCode = portsInCode().ports;
  const inDocs = portsInDocs();
  assert.ok(inCode.length > 0, 'Store has ports');
  assert.deepEqual(
    inDocs.map((port) => port.name),
    inCode.map((port) => port.name),
    'the ports of the table and of Store',
  );
  for (const port of inCode) {
    const row = inDocs.find((r) => r.name === port.name)!;
    assert.deepEqual(row.members, port.members, `the members of ${port.name}`);
    assert.notEqual(row.askedBy, '', `who asks for ${port.name}`);
  }
});

test('every port of Store, and every member of every port, has a doc comment', () => {
  assert.deepEqual(portsInCode().undocumented, []);
});
