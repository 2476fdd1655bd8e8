import { escapeHtml, markdownHtml } from './markdown.js';

/**
 * The reference page's first view: the OpenAPI document as server-side HTML (the introduction with
 * the int64 warning and the error table, then each operation with its parameters, body and
 * responses), shown as soon as the page arrives, with no script. The interactive reference
 * replaces it once it has rendered (start.ts).
 */

/** The element that holds the first view, which the start script removes when the interactive reference takes over. */
export const FIRST_VIEW_ID = 'docs-first-view';

/** What the first view reads of a schema. */
interface Schema {
  /** A named schema, shown by its name. */
  $ref?: string;
  /** The JSON type, or types. */
  type?: string | string[];
  /** The format (int64, date-time...). */
  format?: string;
  /** The values it allows. */
  enum?: unknown[];
  /** The one value it allows. */
  const?: unknown;
  /** An array's items. */
  items?: Schema;
  /** Schemas it is all of (an Error narrowed to its codes). */
  allOf?: Schema[];
  /** An object's properties. */
  properties?: Record<string, Schema>;
}

/** A parameter of an operation. */
interface Parameter {
  /** Its name. */
  name: string;
  /** Where it goes: path, query, header. */
  in: string;
  /** Whether a request must carry it. */
  required?: boolean;
  /** Markdown. */
  description?: string;
  /** Its values. */
  schema?: Schema;
}

/** An answer of an operation. */
interface Response {
  /** Markdown. */
  description: string;
  /** Its body per media type. */
  content?: Record<string, { schema?: Schema }>;
}

/** An operation. */
interface Operation {
  /** Its unique id, the anchor of its section. */
  operationId: string;
  /** Its title. */
  summary: string;
  /** Markdown. */
  description?: string;
  /** The groups it is listed in. */
  tags?: string[];
  /** Its path, query and header parameters. */
  parameters?: Parameter[];
  /** Its body, per media type. */
  requestBody?: { description?: string; content: Record<string, { schema?: Schema }> };
  /** Its answers by status. */
  responses: Record<string, Response>;
  /** Marked experimental: a badge above its title. */
  'x-experimental'?: boolean;
}

/** What the first view reads of the document. */
export interface ReferenceDocument {
  /** The OpenAPI version. */
  openapi: string;
  /** Title, version, and the introduction in Markdown. */
  info: { title: string; version: string; description?: string };
  /** The groups of operations, in order. */
  tags?: { name: string; description?: string }[];
  /** The operations by path and method. */
  paths: Record<string, Record<string, Operation>>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** An operation with where it lives. */
interface Located {
  /** Its method, lower case as in the document. */
  method: string;
  /** Its path, relative to the servers. */
  path: string;
  /** The operation. */
  operation: Operation;
}

/** The operations grouped by tag, in the document's tag order (untagged ones last), each group in path order. */
export function operationsByTag(document: ReferenceDocument): { name: string; description?: string; operations: Located[] }[] {
  const all: Located[] = Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ method, path, operation: item[method]! })),
  );
  const tags = [...(document.tags ?? [])];
  for (const { operation } of all) for (const name of operation.tags ?? []) if (!tags.some((t) => t.name === name)) tags.push({ name });
  const groups = tags.map((tag) => ({ ...tag, operations: all.filter(({ operation }) => operation.tags?.includes(tag.name)) }));
  const untagged = all.filter(({ operation }) => !operation.tags?.length);
  return [...groups, ...(untagged.length > 0 ? [{ name: 'Operations', operations: untagged }] : [])].filter((group) => group.operations.length > 0);
}

/** The first view of `document`, whose JSON is at `documentUrl`. */
export function firstViewHtml(document: ReferenceDocument, documentUrl: string): string {
  const groups = operationsByTag(document);
  const nav = groups
    .map(
      (group) =>
        `<li><span class="docs-nav-tag">${escapeHtml(group.name)}</span><ul>${group.operations
          .map(({ method, operation }) => `<li><a href="#${operationAnchor(operation)}">${escapeHtml(operation.summary)} ${methodBadge(method)}</a></li>`)
          .join('')}</ul></li>`,
    )
    .join('');
  const main = groups
    .map(
      (group) =>
        `<section class="docs-tag"><h2>${escapeHtml(group.name)}</h2>${group.description ? markdownHtml(group.description) : ''}\n${group.operations
          .map(operationHtml)
          .join('\n')}</section>`,
    )
    .join('\n');
  return `<div id="${FIRST_VIEW_ID}" class="docs-first-view">
<nav class="docs-nav" aria-label="Operations"><ul>${nav}</ul><p class="docs-loading" role="status" hidden>Loading the interactive reference (Test Request)…</p></nav>
<main class="docs-main">
<header><p class="docs-versions"><span>v${escapeHtml(document.info.version)}</span> <span>OAS ${escapeHtml(document.openapi)}</span></p><h1>${escapeHtml(document.info.title)}</h1><p><a href="${escapeHtml(documentUrl)}">Download OpenAPI Document</a></p>
<noscript><p class="docs-note">"Test Request" needs JavaScript; everything else is here.</p></noscript></header>
${document.info.description ? markdownHtml(document.info.description) : ''}
${main}
</main>
</div>`;
}

function operationAnchor(operation: Operation): string {
  return `operation-${operation.operationId.replace(/[^A-Za-z0-9_-]/g, '-')}`;
}

function methodBadge(method: string): string {
  return `<span class="docs-method docs-method-${method}">${method.toUpperCase()}</span>`;
}

function operationHtml({ method, path, operation }: Located): string {
  const parts = [
    `<section class="docs-operation" id="${operationAnchor(operation)}">`,
    operation['x-experimental'] ? '<p class="docs-badge">Experimental</p>' : '',
    `<h3>${escapeHtml(operation.summary)}</h3>`,
    `<p class="docs-endpoint">${methodBadge(method)} <code>${escapeHtml(path)}</code></p>`,
    operation.description ? markdownHtml(operation.description) : '',
  ];
  if (operation.parameters?.length) {
    const rows = operation.parameters.map(
      (p) =>
        `<tr><td><code>${escapeHtml(p.name)}</code>${p.required ? ' <span class="docs-required">required</span>' : ''}</td><td>${escapeHtml(p.in)}</td><td>${schemaHtml(p.schema)}</td><td>${markdownHtml(p.description ?? '')}</td></tr>`,
    );
    parts.push(`<h4>Parameters</h4><table><thead><tr><th scope="col">Name</th><th scope="col">In</th><th scope="col">Type</th><th scope="col">Description</th></tr></thead><tbody>${rows.join('')}</tbody></table>`);
  }
  if (operation.requestBody) {
    const types = Object.entries(operation.requestBody.content);
    parts.push(
      `<h4>Body</h4>${markdownHtml(operation.requestBody.description ?? '')}<p>${types.map(([type]) => `<code>${escapeHtml(type)}</code>`).join(' or ')}: ${schemaHtml(types[0]?.[1].schema)}</p>`,
    );
  }
  const rows = Object.entries(operation.responses).map(([status, response]) => {
    const [type, media] = Object.entries(response.content ?? {})[0] ?? [];
    const body = type ? `<code>${escapeHtml(type)}</code> ${schemaHtml(media?.schema)}` : '';
    return `<tr><td><strong>${escapeHtml(status)}</strong></td><td>${markdownHtml(response.description)}</td><td>${body}</td></tr>`;
  });
  parts.push(`<h4>Responses</h4><table><thead><tr><th scope="col">Status</th><th scope="col">Meaning</th><th scope="col">Body</th></tr></thead><tbody>${rows.join('')}</tbody></table>`);
  parts.push('</section>');
  return parts.filter(Boolean).join('\n');
}

/** A schema in a few words: its name, its type and format, its values, or an Error with the codes it may hold. */
function schemaHtml(schema: Schema | undefined): string {
  return schema ? escapeHtml(schemaText(schema)) : '';
}

function schemaText(schema: Schema): string {
  if (schema.$ref) return schema.$ref.slice(schema.$ref.lastIndexOf('/') + 1);
  if (schema.allOf) {
    const codes = schema.allOf.map((part) => part.properties?.code?.enum).find(Boolean);
    const named = schema.allOf.map(schemaText).filter(Boolean);
    return codes ? `${named[0] ?? 'object'} (code ${codes.join(', ')})` : named.join(' & ');
  }
  if (schema.enum) return `one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  const type = [schema.type ?? ''].flat().join(' or ');
  if (type === 'array' && schema.items) return `array of ${schemaText(schema.items)}`;
  return schema.format ? `${type} (${schema.format})` : type;
}
