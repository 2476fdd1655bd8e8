import { Type, type TObject, type TSchema } from 'typebox';
import type { Scope } from '../domain/api-key.js';
import type { ErrorCode } from '../errors.js';

export type HttpMethod = 'GET' | 'PATCH' | 'POST' | 'PUT' | 'DELETE';

export interface ResponseSpec {
  description: string;
  /** The body of a success response; absent for responses without a body. */
  schema?: TSchema;
  /** The media type of that body, when not JSON (a stream of Server-Sent Events). */
  contentType?: string;
  /** For an error response: the codes its Error body can carry. */
  errorCodes?: readonly ErrorCode[];
  /** Response headers beyond the common ones; `required` ones are always sent with this status. */
  headers?: Record<string, { description: string; schema: TSchema; required?: boolean }>;
}

/** A tag of the document, which groups operations (the docs page shows one section per tag). */
export interface Tag {
  /** The name operations carry. */
  name: string;
  /** What the operations under it are about. */
  description: string;
}

/** A schema the document lists under components and refers to by $ref wherever it is used. */
export interface NamedSchema {
  /** Its name under components/schemas. */
  name: string;
  /** The schema, matched by identity wherever an operation uses it. */
  schema: TSchema;
}

/** The limits a route's body limit may be sized by. */
export interface BodyLimits {
  /** BODY_LIMIT */
  bodyLimit: number;
  /** BATCH_MAX_CHANGES */
  batchMaxChanges: number;
}

/**
 * One API operation, described once: both lanes (the Fastify route and the fast lane) take their
 * path, scope, validation and body schema from it, and the OpenAPI document is built from it, so
 * none of them can disagree.
 */
export interface OperationSpec {
  operationId: string;
  method: HttpMethod;
  /** OpenAPI form, e.g. /v1/inventory/{petId}. */
  path: string;
  summary: string;
  description: string;
  /** The document's tags the operation is listed under; the document lists every tag once, in the order operations first name it. */
  tags: readonly Tag[];
  /** The scope a key needs; undefined marks a public (unauthenticated) operation. */
  scope: Scope | undefined;
  /** Path parameters, as the document shows them; on the wire each is a string segment. */
  pathParams?: Record<string, TSchema>;
  /** Request headers the operation reads (extensions such as If-Match), for the document. */
  requestHeaders?: Record<string, { description: string; schema: TSchema }>;
  querystring?: TObject;
  /** What each parameter of `querystring` accepts, in words ("an integer from 1 to 500"), for the message refusing a bad value. */
  queryAccepts?: Readonly<Record<string, string>>;
  body?: {
    schema: TObject;
    contentTypes: readonly string[];
    description: string;
    /** The operation checks the body itself (a batch names the change it refuses by index); the routes skip the schema check. */
    checkedByOperation?: boolean;
  };
  /** The body limit of the operation's route when it is not BODY_LIMIT (a batch's grows with its changes). */
  bodyLimit?: (limits: BodyLimits) => number;
  /** The schema of this operation's Error bodies when it is not the spec's Error (a batch's carries `index`); listed after it under components. */
  errorSchema?: NamedSchema;
  /**
   * The named schemas this operation brings to the document's components, by name, in the order
   * the document lists them (one named by an earlier operation is not named again).
   */
  components?: Readonly<Record<string, TSchema>>;
  /** Success and operation-specific error responses; the common errors are added for every operation. */
  responses: Record<number, ResponseSpec>;
  /** Statuses the spec itself lists for this operation; the document marks every other one x-extension. */
  contractStatuses?: readonly number[];
  /** Vendor extensions for the document: x-extension marks what the contract does not have, x-experimental what may change. */
  extensions?: Record<`x-${string}`, unknown>;
}

/** Empty query: an operation that declares no query parameters refuses any (invalid_parameter). */
export const NoQuery = Type.Object({}, { additionalProperties: false });
