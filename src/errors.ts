/**
 * The closed catalogue of API errors (docs/decisions.md 4.2): every code, its HTTP status and default message,
 * defined once. Handlers throw ApiError; the error handler turns it into the spec's Error body.
 */

export const ERROR_CATALOGUE = {
  unauthorized: { status: 401, message: 'A valid API key is required: send "Authorization: Bearer <key>".' },
  forbidden: { status: 403, message: 'This API key lacks the scope this operation needs.' },
  not_found: { status: 404, message: 'No such resource.' },
  method_not_allowed: { status: 405, message: 'This method is not allowed on this resource.' },
  request_timeout: { status: 408, message: 'The request was not received in time.' },
  invalid_pet_id: {
    status: 400,
    message: 'petId must be a decimal integer from -9223372036854775808 to 9223372036854775807, without leading zeros or a plus sign.',
  },
  invalid_quantity: { status: 400, message: 'quantity must be an integer from 0 to 2147483647.' },
  missing_field: { status: 400, message: 'A required field is missing.' },
  unknown_field: { status: 400, message: 'The body holds a field this operation does not accept.' },
  invalid_body: { status: 400, message: 'The request body must be a JSON object.' },
  malformed_json: { status: 400, message: 'The request body is not valid JSON.' },
  invalid_parameter: { status: 400, message: 'A query parameter is not valid.' },
  invalid_reason: { status: 400, message: 'reason must be one of received, returned, correction, sold, damaged.' },
  bad_request: { status: 400, message: 'The HTTP request could not be parsed.' },
  expectation_failed: { status: 417, message: 'The only expectation this service meets is Expect: 100-continue.' },
  headers_too_large: { status: 431, message: 'The request line and headers exceed the size limit.' },
  unsupported_media_type: {
    status: 415,
    message: 'Send the body as application/json or application/merge-patch+json (charset utf-8).',
  },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  precondition_failed: { status: 412, message: 'The entry has changed since the given ETag.' },
  precondition_required: { status: 428, message: 'This operation requires an If-Match header.' },
  insufficient_stock: { status: 409, message: 'The adjustment would take the count below 0; nothing changed.' },
  reservation_not_active: { status: 409, message: 'The reservation is no longer active; nothing changed.' },
  events_pruned: {
    status: 410,
    message: 'The events after this seq were pruned: reload the list, then follow the events from the seq in X-Events-Head.',
  },
  events_beyond_head: {
    status: 409,
    message: 'No event has this seq yet: the log ends before it (the store was rebuilt, or the seq is from another store). Reload the list, then follow the events from the seq in X-Events-Head.',
  },
  idempotency_key_reused: {
    status: 422,
    message: 'This Idempotency-Key was already used with a different request.',
  },
  rate_limited: { status: 429, message: 'Too many requests; retry after the number of seconds in Retry-After.' },
  service_unavailable: { status: 503, message: 'The service cannot reach its store right now; retry shortly.' },
  internal_error: { status: 500, message: 'An unexpected error occurred; the request id identifies it in the logs.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export const ERROR_CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

/** The spec's Error object, with `index` when it refuses one change of a batch (decisions 5.12). */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  status: number;
  /** The position, in the batch's `changes`, of the change refused: the one field beyond the contract's three. */
  index?: number;
}

/** An error the API answers with as-is: code, status and a message meant for the caller. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Which change of a batch the error refuses; undefined for any other error. */
  readonly index: number | undefined;

  constructor(code: ErrorCode, message?: string, headers: Record<string, string> = {}, index?: number) {
    super(message ?? ERROR_CATALOGUE[code].message);
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_CATALOGUE[code].status;
    this.headers = headers;
    this.index = index;
  }

  /** The same error about change `index` of a batch: `changes[index]: ` before the message, and `index` in the body. */
  atChange(index: number, headers: Record<string, string> = { ...this.headers }): ApiError {
    return new ApiError(this.code, `changes[${index}]: ${this.message}`, headers, index);
  }

  toBody(): ErrorBody {
    return this.index === undefined
      ? { code: this.code, message: this.message, status: this.status }
      : { code: this.code, message: this.message, status: this.status, index: this.index };
  }
}

/** The store could not be reached or is busy: the request may succeed if retried (503). */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/** What any failure is answered as: an ApiError as it is, a store outage as 503, anything else as a generic 500. */
export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof StoreUnavailableError) return new ApiError('service_unavailable', undefined, { 'retry-after': '1' });
  return new ApiError('internal_error');
}
