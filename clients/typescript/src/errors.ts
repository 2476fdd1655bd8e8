import type { ServiceErrorCode } from './types.js';

/** A code the service never sends: the answer was not the service's Error object (a proxy's HTML page, say). */
export const UNEXPECTED_RESPONSE = 'unexpected_response';

export type InventoryErrorCode = ServiceErrorCode | typeof UNEXPECTED_RESPONSE;

/** Every non-2xx answer (and any answer that is not what the API promises), thrown with what identifies it. */
export class InventoryApiError extends Error {
  readonly code: InventoryErrorCode;
  readonly status: number;
  /** X-Request-Id of the answer: the service's logs are searched by it. Undefined when something else answered. */
  readonly requestId: string | undefined;
  /** The ETag the error answer carried: on 412 precondition_failed, the entry's current version. */
  readonly etag: string | undefined;
  /** The X-Events-Head the error answer carried: on 410 events_pruned and 409 events_beyond_head, the seq to follow from once the list is reloaded. */
  readonly eventsHead: number | undefined;
  /** batchUpdateInventory's refusal: the index, in the changes sent, of the first change that failed (nothing was applied). */
  readonly index: number | undefined;

  constructor(init: {
    code: InventoryErrorCode;
    message: string;
    status: number;
    requestId?: string | undefined;
    etag?: string | undefined;
    eventsHead?: number | undefined;
    index?: number | undefined;
  }) {
    super(init.message);
    this.name = 'InventoryApiError';
    this.code = init.code;
    this.status = init.status;
    this.requestId = init.requestId;
    this.etag = init.etag;
    this.eventsHead = init.eventsHead;
    this.index = init.index;
  }
}

/** The error for a non-2xx answer, from the body openapi-fetch read (parsed JSON, text, or undefined when empty). */
export function errorFromAnswer(response: Response, body: unknown): InventoryApiError {
  const identity = {
    status: response.status,
    requestId: response.headers.get('x-request-id') ?? undefined,
    etag: response.headers.get('etag') ?? undefined,
    eventsHead: eventsHeadOf(response),
  };
  if (isErrorBody(body)) return new InventoryApiError({ ...identity, code: body.code as ServiceErrorCode, message: body.message, index: indexOf(body) });
  return unexpectedAnswer(response, typeof body === 'string' ? body : '');
}

/** An answer that is not the API's: the status and the start of the text, so the cause shows in the message. */
export function unexpectedAnswer(response: Response, text: string, why = 'not the service\'s JSON Error object'): InventoryApiError {
  // Tags stripped and whitespace folded: a gateway's HTML page reads as its title and first words.
  const excerpt = text.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 200);
  return new InventoryApiError({
    code: UNEXPECTED_RESPONSE,
    message: [`HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`, why, excerpt].filter(Boolean).join(': '),
    status: response.status,
    requestId: response.headers.get('x-request-id') ?? undefined,
    etag: response.headers.get('etag') ?? undefined,
  });
}

/** A batch refusal's `index`, when the Error object carries one that reads as an index. */
function indexOf(body: object): number | undefined {
  const index = (body as { index?: unknown }).index;
  return typeof index === 'number' && Number.isSafeInteger(index) && index >= 0 ? index : undefined;
}

function isErrorBody(body: unknown): body is { code: string; message: string } {
  return typeof body === 'object' && body !== null && typeof (body as { code?: unknown }).code === 'string' && typeof (body as { message?: unknown }).message === 'string';
}

/** The X-Events-Head of an answer (the newest seq of the event log), or undefined when it has none that reads as one. */
export function eventsHeadOf(response: Response): number | undefined {
  const value = response.headers.get('x-events-head');
  return value !== null && /^\d{1,15}$/.test(value.trim()) ? Number(value) : undefined;
}
