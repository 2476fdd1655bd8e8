import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from 'typebox';
import { buildOpenApiDocument } from '../../src/openapi/document.js';
import type { OperationSpec } from '../../src/operations/operation.js';

const OPTIONS = { productionUrl: undefined, stagingUrl: undefined, bodyLimit: 1024 };

const Colour = Type.Unsafe<string>({ type: 'string', enum: ['red', 'blue'] });
const Toy = Type.Object({ name: Type.String(), colour: Colour }, { additionalProperties: false });
const ToyError = Type.Object({ code: Type.String(), message: Type.String(), status: Type.Integer(), toy: Type.String() });
const TOYS_TAG = { name: 'toys', description: 'Toys' };
const META_TAG = { name: 'about', description: 'About' };

/** A read-only operation with what a test gives it. */
function readOperation(operationId: string, path: string, parts: Partial<OperationSpec> = {}): OperationSpec {
  return { operationId, method: 'GET', path, summary: operationId, description: operationId, tags: [TOYS_TAG], scope: 'inventory:read', responses: { 200: { description: 'ok', schema: Toy } }, ...parts };
}

/** The value at a path of keys inside a built document. */
function dig(value: unknown, ...path: string[]): unknown {
  return path.reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], value);
}

test('the tags are those the operations name, each once, in the order they first name it', () => {
  const document = buildOpenApiDocument(
    [readOperation('listToys', '/v1/toys'), readOperation('about', '/v1/about', { tags: [META_TAG] }), readOperation('getToy', '/v1/toys/one', { tags: [TOYS_TAG, META_TAG] })],
    OPTIONS,
  );
  assert.deepEqual(document.tags, [TOYS_TAG, META_TAG]);
  assert.deepEqual(dig(document, 'paths', '/toys/one', 'get', 'tags'), ['toys', 'about']);
});

test('the named schemas are those the operations bring, in their order, then Error and the operations\' own error schemas; each used by $ref', () => {
  const document = buildOpenApiDocument(
    [
      readOperation('listToys', '/v1/toys', { components: { Toy, Colour }, errorSchema: { name: 'ToyError', schema: ToyError } }),
      readOperation('getToy', '/v1/toys/one', { components: { Toy } }),
    ],
    OPTIONS,
  );
  const schemas = dig(document, 'components', 'schemas') as Record<string, unknown>;
  assert.deepEqual(Object.keys(schemas), ['Toy', 'Colour', 'Error', 'ToyError']);
  assert.deepEqual(dig(schemas, 'Toy', 'properties', 'colour'), { $ref: '#/components/schemas/Colour' }, 'a named schema inside another is a $ref');
  assert.deepEqual(dig(document, 'paths', '/toys/one', 'get', 'responses', '200', 'content', 'application/json', 'schema'), { $ref: '#/components/schemas/Toy' });
  const listError = dig(document, 'paths', '/toys', 'get', 'responses', '401', 'content', 'application/json', 'schema', 'allOf', '0');
  assert.deepEqual(listError, { $ref: '#/components/schemas/ToyError' }, 'the operation\'s own error schema');
  const getError = dig(document, 'paths', '/toys/one', 'get', 'responses', '401', 'content', 'application/json', 'schema', 'allOf', '0');
  assert.deepEqual(getError, { $ref: '#/components/schemas/Error' });
});

test('a schema no operation names is written out where it is used', () => {
  const document = buildOpenApiDocument([readOperation('listToys', '/v1/toys')], OPTIONS);
  assert.deepEqual(Object.keys(dig(document, 'components', 'schemas') as object), ['Error']);
  assert.equal(dig(document, 'paths', '/toys', 'get', 'responses', '200', 'content', 'application/json', 'schema', 'type'), 'object');
});

test('a component name or a tag declared two ways over is refused when the document is built', () => {
  const OtherToy = Type.Object({ id: Type.Integer() });
  assert.throws(
    () => buildOpenApiDocument([readOperation('listToys', '/v1/toys', { components: { Toy } }), readOperation('getToy', '/v1/toys/one', { components: { Toy: OtherToy } })], OPTIONS),
    /the component Toy is declared two ways/,
  );
  assert.throws(
    () => buildOpenApiDocument([readOperation('listToys', '/v1/toys', { components: { Toy } }), readOperation('getToy', '/v1/toys/one', { components: { Plaything: Toy } })], OPTIONS),
    /the component Plaything is declared two ways/,
  );
  assert.throws(
    () => buildOpenApiDocument([readOperation('listToys', '/v1/toys'), readOperation('getToy', '/v1/toys/one', { tags: [{ name: 'toys', description: 'Games' }] })], OPTIONS),
    /the tag toys is declared two ways/,
  );
});
