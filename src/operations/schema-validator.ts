import { Compile } from 'typebox/compile';
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import type { SchemaError } from './validation.js';

/** What a validator answers: the value (converted, for a path or a query), or the schema's errors. */
export type SchemaCheck = { value: unknown; error?: undefined } | { value?: undefined; error: SchemaError[] };

/**
 * The one compiler of request schemas, for both lanes: Fastify's routes get it as their validator
 * compiler (app.ts) and the fast lane through bodyValidator, so a body is refused with the same
 * errors whichever lane read it. A body is checked as sent; a path or query string, whose values
 * arrive as text, is converted to the schema's types first.
 */
export function compileSchemaValidator({ schema, httpPart }: { schema: TSchema; httpPart?: string }): (value: unknown) => SchemaCheck {
  // Compiled at its first use, not at start: compiling every route's schemas took a good part of the server's start.
  let check: ReturnType<typeof Compile<TSchema>> | undefined;
  return (value) => {
    check ??= Compile(schema);
    const converted = httpPart === 'body' ? value : Value.Convert(schema, value);
    return check.Check(converted) ? { value: converted } : { error: [...check.Errors(converted)] as SchemaError[] };
  };
}
