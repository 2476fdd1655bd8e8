import { ApiError, ERROR_CATALOGUE, type ErrorCode } from '../errors.js';
import { stringifyJson } from '../json.js';
import { DELTA_MAX, DELTA_MIN } from '../schemas/values.js';
import type { OperationSpec } from './operation.js';

/** One schema validation error, as the validator (and Fastify, which runs the same one) reports it. */
export interface SchemaError {
  keyword: string;
  instancePath: string;
  schemaPath: string;
  params: Record<string, unknown>;
  message?: string | undefined;
}

/** The code for an invalid value of each body field; the OpenAPI document lists them too. */
export const FIELD_ERROR_CODES: Readonly<Record<string, ErrorCode>> = {
  quantity: 'invalid_quantity',
  // A delta is a number of pets, as a quantity is: one code for every bad number of pets (decisions 5.11).
  delta: 'invalid_quantity',
  reason: 'invalid_reason',
  // The fields of a batch's change (decisions 5.12).
  petId: 'invalid_pet_id',
  ifMatch: 'invalid_parameter',
};

/** What a field accepts, where its code's catalogue message names another field (the code is shared). */
export const FIELD_MESSAGES: Readonly<Record<string, string>> = {
  delta: `delta must be a non-zero integer from ${DELTA_MIN} to ${DELTA_MAX}`,
  ifMatch: 'ifMatch must be one If-Match value: "*" or entity tags such as "v3", as sent in ETag',
};

/** What an operation's query and body accept, named in the messages that refuse them. */
export interface AcceptedInput {
  /** Each query parameter, and what it accepts in words ("an integer from 1 to 500"). */
  query: Readonly<Record<string, string>>;
  /** The fields the body accepts. */
  bodyFields: readonly string[];
  /** The ones of them it requires. */
  requiredBodyFields: readonly string[];
  /** What a field accepts, where it differs from its code's catalogue message (a reservation's quantity starts at 1). */
  fieldMessages?: Readonly<Record<string, string>>;
}

/** What the operation's query and body accept, from its declaration. */
export function acceptedInput(spec: OperationSpec): AcceptedInput {
  return {
    query: spec.queryAccepts ?? {},
    bodyFields: Object.keys(spec.body?.schema.properties ?? {}),
    requiredBodyFields: spec.body?.schema.required ?? [],
  };
}

/** Codes a JSON body can fail with, whatever its fields. */
export const BODY_SHAPE_ERROR_CODES: readonly ErrorCode[] = ['missing_field', 'unknown_field', 'invalid_body', 'malformed_json'];

/**
 * Turns schema validation errors into one API error. When a body has several problems the
 * most basic one wins: not an object, then unknown fields, missing fields, bad values.
 */
export function validationToApiError(errors: readonly SchemaError[], part: string | undefined, body: unknown, accepted: AcceptedInput): ApiError {
  if (part === 'querystring') {
    const unknown = errors.find((e) => e.keyword === 'additionalProperties');
    const name = (unknown?.params as { additionalProperties?: string[] } | undefined)?.additionalProperties?.[0];
    if (name !== undefined) return unknownQueryParameter(name, Object.keys(accepted.query));
    const field = errors[0]?.instancePath.split('/')[1] ?? '';
    return invalidQueryParameter(field, accepted.query[field]);
  }
  if (body === undefined) return missingBody(accepted);
  if (errors.some((e) => e.instancePath === '' && e.keyword === 'type')) {
    return new ApiError('invalid_body', `The request body must be a JSON object, not ${describe(body)}.`);
  }
  for (const e of errors) {
    if (e.keyword !== 'additionalProperties') continue;
    const name = (e.params as { additionalProperties?: string[] }).additionalProperties?.[0];
    return new ApiError('unknown_field', `Unknown field "${name}": the body accepts only ${accepted.bodyFields.join(', ')}.`);
  }
  for (const e of errors) {
    if (e.keyword !== 'required') continue;
    const params = e.params as { requiredProperties?: string[]; missingProperty?: string };
    const name = params.requiredProperties?.[0] ?? params.missingProperty;
    return new ApiError('missing_field', `Missing required field "${name}".`);
  }
  const field = errors.map((e) => e.instancePath.split('/')[1]).find((f) => f !== undefined && f !== '');
  const code = field === undefined ? undefined : FIELD_ERROR_CODES[field];
  if (!code) return new ApiError('invalid_body');
  const given = (body as Record<string, unknown>)[field!];
  const accepts = accepted.fieldMessages?.[field!] ?? FIELD_MESSAGES[field!] ?? ERROR_CATALOGUE[code].message.replace(/\.$/, '');
  return new ApiError(code, `${accepts}; got ${preview(given)}.`);
}

/** A query parameter whose value is refused: what it accepts, in words (never the schema's pattern). */
export function invalidQueryParameter(name: string, accepts: string | undefined): ApiError {
  if (accepts === undefined) return new ApiError('invalid_parameter', `Query parameter "${name}" is not valid.`);
  return new ApiError('invalid_parameter', `Query parameter "${name}" must be ${accepts}.`);
}

function unknownQueryParameter(name: string, accepted: readonly string[]): ApiError {
  const takes = accepted.length === 0 ? 'this operation takes none' : `this operation takes only ${inWords(accepted.map((n) => `"${n}"`))}`;
  return new ApiError('invalid_parameter', `Unknown query parameter "${name}": ${takes}.`);
}

/** No body, or an empty one (decisions 3.4): the fields to send, the required ones marked. */
function missingBody(accepted: AcceptedInput): ApiError {
  const fields = accepted.bodyFields.map((f) => `"${f}" (${accepted.requiredBodyFields.includes(f) ? 'required' : 'optional'})`);
  return new ApiError('missing_field', `The request body is empty: send a JSON object with ${inWords(fields)}.`);
}

/** a; a and b; a, b and c: a list as a sentence says it. */
function inWords(items: readonly string[]): string {
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/** A short, safe rendering of a rejected value for an error message. */
function preview(value: unknown): string {
  // stringifyJson: a bigint (an integer beyond 2^53) is shown with its digits, where JSON.stringify would throw.
  const text = stringifyJson(value);
  return text.length > 40 ? `${text.slice(0, 40)}...` : text;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
