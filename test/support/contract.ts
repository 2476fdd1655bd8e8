import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';

/**
 * Checks responses against the service's own OpenAPI document: a documented operation must
 * declare the status it answered with, and the body must match that response's schema.
 * Responses outside any operation (unknown path, 405) must be the Error object.
 */
export class ContractChecker {
  readonly #compiled: Compiled;
  readonly #prefix: string;
  /** "operationId status" pairs seen, for coverage checks. */
  readonly seen = new Set<string>();

  /**
   * A checker of the document `text`, sharing its compiled schemas with every other checker of the
   * same text in this process: compiling them took tens of milliseconds, which every test app paid.
   */
  static of(text: string): ContractChecker {
    let compiled = compiledDocuments.get(text);
    if (!compiled) {
      compiled = compile(JSON.parse(text) as OpenApiDoc);
      compiledDocuments.set(text, compiled);
    }
    return new ContractChecker(compiled);
  }

  private constructor(compiled: Compiled) {
    this.#compiled = compiled;
    // A relative server URL (the default) resolves against the host the document came from.
    this.#prefix = new URL(compiled.doc.servers[0]!.url, 'http://service.invalid').pathname;
  }

  check(method: string, path: string, status: number, headers: Record<string, string | string[] | undefined>, text: string): void {
    const where = `${method} ${path} -> ${status}`;
    assert.ok(headers['x-request-id'], `${where}: X-Request-Id missing`);
    if (method === 'HEAD') return;
    if (status === 304) {
      // No body to check; the status must still be documented.
      const found = this.#operation(method, path.split('?')[0]!);
      assert.ok(found?.[1].responses['304'], `${where}: 304 is not documented`);
      this.seen.add(`${found[1].operationId} 304`);
      this.#checkHeaders(found[1], 304, headers, where);
      return;
    }
    if (/^text\/event-stream/i.test(String(headers['content-type']))) {
      // A stream never ends by itself: its status, media type and headers are checked, not its body.
      const found = this.#operation(method, path.split('?')[0]!);
      const content = (found?.[1].responses[String(status)] as { content?: Record<string, unknown> } | undefined)?.content;
      assert.ok(content?.['text/event-stream'], `${where}: a stream is not documented`);
      this.seen.add(`${found![1].operationId} ${status}`);
      this.#checkHeaders(found![1], status, headers, where);
      return;
    }
    assert.match(String(headers['content-type']), /^application\/json; charset=utf-8$/i, `${where}: content type`);
    const body: unknown = JSON.parse(text);
    const found = this.#operation(method, path.split('?')[0]!);
    if (!found) {
      // Outside the document (health checks) only errors have a shape to keep: the Error object.
      if (status < 400) return;
      this.#validate('openapi#/components/schemas/Error', body, where);
      assert.equal((body as { status: number }).status, status, `${where}: Error.status must equal the HTTP status`);
      return;
    }
    const [docPath, op] = found;
    assert.ok(op.responses[String(status)], `${where}: status ${status} is not documented for ${op.operationId}`);
    this.seen.add(`${op.operationId} ${status}`);
    this.#checkHeaders(op, status, headers, where);
    const pointer = `openapi#/paths/${escape(docPath)}/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
    this.#validate(pointer, body, where);
  }

  /** Headers the document marks required for this response must be there. */
  #checkHeaders(op: OpenApiOperation, status: number, headers: Record<string, string | string[] | undefined>, where: string): void {
    const documented = (op.responses[String(status)] as { headers?: Record<string, { required?: boolean }> }).headers ?? {};
    for (const [name, header] of Object.entries(documented)) {
      if (header.required) assert.ok(headers[name.toLowerCase()], `${where}: required header ${name} missing`);
    }
  }

  #operation(method: string, path: string): [string, OpenApiOperation] | undefined {
    if (!path.startsWith(`${this.#prefix}/`)) return undefined;
    const rest = path.slice(this.#prefix.length);
    const m = method === 'HEAD' ? 'get' : method.toLowerCase();
    for (const [docPath, item] of Object.entries(this.#compiled.doc.paths)) {
      const pattern = new RegExp(`^${docPath.replace(/\{\w+\}/g, '[^/]+')}$`);
      if (pattern.test(rest) && item[m]) return [docPath, item[m]];
    }
    return undefined;
  }

  #validate(ref: string, body: unknown, where: string): void {
    let validate = this.#compiled.validators.get(ref);
    if (!validate) {
      validate = this.#compiled.ajv.getSchema(ref);
      assert.ok(validate, `${where}: no schema at ${ref}`);
      this.#compiled.validators.set(ref, validate);
    }
    assert.ok(validate(body), `${where}: body does not match the document: ${this.#compiled.ajv.errorsText(validate.errors)}`);
  }
}

/** A document's schemas, compiled as a check first needs each. */
interface Compiled {
  doc: OpenApiDoc;
  ajv: Ajv2020;
  validators: Map<string, ValidateFunction>;
}

const compiledDocuments = new Map<string, Compiled>();

function compile(doc: OpenApiDoc): Compiled {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  ajv.addSchema(doc, 'openapi');
  return { doc, ajv, validators: new Map() };
}

function escape(docPath: string): string {
  return encodeURIComponent(docPath.replaceAll('~', '~0').replaceAll('/', '~1'));
}

export interface OpenApiOperation {
  operationId: string;
  responses: Record<string, unknown>;
  [key: string]: unknown;
}

export interface OpenApiDoc {
  servers: { url: string }[];
  paths: Record<string, Record<string, OpenApiOperation | undefined>>;
  components: { schemas: Record<string, unknown> };
  [key: string]: unknown;
}
