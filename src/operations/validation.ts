import { ApiError, ERROR_CATALOGUE, type ErrorCode } from '../errors.js';

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
  reason: 'invalid_reason',
};

/** Codes a JSON body can fail with, whatever its fields. */
export const BODY_SHAPE_ERROR_CODES: readonly ErrorCode[] = ['missing_field', 'unknown_field', 'invalid_body', 'malformed_json'];

/**
 * Turns schema validation errors into one API error. When a body has several problems the
 * most basic one wins: not an object, then unknown fields, missing fields, bad values.
 */
export function validationToApiError(
  errors: readonly SchemaError[],
  part: string | undefined,
  body: unknown,
  allowedFields: readonly string[],
): ApiError {
  if (part === 'querystring') {
    const unknown = errors.find((e) => e.keyword === 'additionalProperties');
    const name = (unknown?.params as { additionalProperties?: string[] } | undefined)?.additionalProperties?.[0];
    if (name !== undefined) return new ApiError('invalid_parameter', `Unknown query parameter "${name}".`);
    const field = errors[0]?.instancePath.split('/')[1] ?? 'query';
    return new ApiError('invalid_parameter', `Query parameter "${field}" is not valid: ${errors[0]?.message ?? 'invalid'}.`);
  }
  if (body === undefined) {
    return new ApiError('missing_field', `A JSON body is required with the field(s) ${allowedFields.join(', ')}.`);
  }
  if (errors.some((e) => e.instancePath === '' && e.keyword === 'type')) {
    return new ApiError('invalid_body', `The request body must be a JSON object, not ${describe(body)}.`);
  }
  for (const e of errors) {
    if (e.keyword !== 'additionalProperties') continue;
    const name = (e.params as { additionalProperties?: string[] }).additionalProperties?.[0];
    return new ApiError('unknown_field', `Unknown field "${name}": the body accepts only ${allowedFields.join(', ')}.`);
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
  return new ApiError(code, `${ERROR_CATALOGUE[code].message.replace(/\.$/, '')}; got ${preview(given)}.`);
}

/** A short, safe rendering of a rejected value for an error message. */
function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 40)}...` : text;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
