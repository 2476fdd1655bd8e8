import { Type, type Static } from 'typebox';
import { ERROR_CODES, type ErrorCode } from '../errors.js';
import { Nullable } from './nullable.js';
import { CHANGE_REASONS, DELTA_MAX, DELTA_MIN, PET_STATUSES, QUANTITY_MAX, QUANTITY_MIN } from './values.js';

export const PetStatus = Type.Unsafe<(typeof PET_STATUSES)[number]>({
  type: 'string',
  enum: [...PET_STATUSES],
  description: 'Status of the pet',
});
export type PetStatus = Static<typeof PetStatus>;

/**
 * What every petId description ends with. `format: int64` says it to generators; these words say it
 * to people, because the usual JSON parsers (JavaScript's among them) read numbers as doubles and
 * silently round ids beyond 2^53.
 */
export const PET_ID_INT64_NOTE =
  'A signed 64-bit integer (int64, -9223372036854775808 to 9223372036854775807), written as plain JSON digits: ' +
  'parse it losslessly (as a BigInt, a 64-bit integer or a string of digits), never as a double, which rounds ids beyond 2^53 ' +
  '(9007199254740993 would become 9007199254740992).';

/** The description of a petId: what it names, then the int64 note. */
export function petIdDescription(what: string): string {
  return `${what}. ${PET_ID_INT64_NOTE}`;
}

/** int64 in JSON, bigint in code: serialised digit for digit, never through a float. */
export const PetId = Type.Unsafe<bigint>({
  type: 'integer',
  format: 'int64',
  description: petIdDescription('Identifier of the animal this entry tracks'),
});

export const Quantity = Type.Integer({
  minimum: QUANTITY_MIN,
  maximum: QUANTITY_MAX,
  description: 'Current stock count',
});

/** What active reservations hold of an entry, and what is left for anyone else (decisions 12.2). */
export const HeldFields = {
  reserved: Type.Integer({ minimum: 0, maximum: QUANTITY_MAX, description: 'What active reservations hold of it (an expired one holds nothing)' }),
  available: Type.Integer({
    minimum: 0,
    maximum: QUANTITY_MAX,
    description: 'quantity - reserved, never below 0: what a new reservation or a sale may take',
  }),
};

/** What reservations hold, as the contract's InventoryItem carries it: always answered, required of no client (decisions 12.2). */
const HeldExtension = {
  reserved: Type.Optional(Type.Integer({ ...HeldFields.reserved, 'x-extension': true })),
  available: Type.Optional(Type.Integer({ ...HeldFields.available, 'x-extension': true })),
};

export const InventoryItem = Type.Object(
  {
    petId: PetId,
    quantity: Quantity,
    status: PetStatus,
    ...HeldExtension,
  },
  { additionalProperties: false },
);

/** An entry as the store and the CLI handle it: what creations and imports give, and what reservations hold (0 when absent). */
export const StoredItem = Type.Object({ petId: PetId, quantity: Quantity, status: PetStatus, reserved: Type.Optional(HeldFields.reserved) });
export type InventoryItem = Static<typeof StoredItem>;

export const InventoryList = Type.Array(InventoryItem);

export const ChangeReason = Type.Unsafe<(typeof CHANGE_REASONS)[number]>({
  type: 'string',
  enum: [...CHANGE_REASONS],
  description: 'Why the count changed: received (new arrivals), returned (returns), correction (manual adjustment), sold (a sale), damaged (a write-off)',
});
export type ChangeReason = Static<typeof ChangeReason>;

/** The optional reason of a change, marked as the extension it is. */
const ReasonField = Type.Optional(Type.Unsafe<ChangeReason>({ ...ChangeReason, 'x-extension': true }));

export const InventoryUpdate = Type.Object(
  {
    quantity: Type.Integer({
      minimum: QUANTITY_MIN,
      maximum: QUANTITY_MAX,
      description: 'The new stock count (the value the entry is to hold)',
    }),
    // Optional and an extension: a body with only quantity is the contract's request.
    reason: ReasonField,
  },
  { additionalProperties: false },
);
export type InventoryUpdate = Static<typeof InventoryUpdate>;

/** How much a count moves: a non-zero integer (decisions 5.11). */
export const Delta = Type.Integer({
  minimum: DELTA_MIN,
  maximum: DELTA_MAX,
  // Typed, as every subschema of the document: the docs page's validator rejects one without a type.
  not: { type: 'integer', const: 0 },
  description: `How much the count moves: a non-zero integer from ${DELTA_MIN} to ${DELTA_MAX} (negative for sales and write-offs)`,
});

/** The body of POST /v1/inventory/{petId}/adjustments. */
export const InventoryAdjustment = Type.Object(
  {
    delta: Delta,
    reason: ReasonField,
  },
  { additionalProperties: false },
);
export type InventoryAdjustment = Static<typeof InventoryAdjustment>;

/** The fields of one change of a batch: exactly one of quantity and delta (checked apart, for its own message). */
const batchChangeFields = {
  petId: Type.Unsafe<bigint>({ type: 'integer', format: 'int64', description: petIdDescription('The pet whose count changes') }),
  quantity: Type.Optional(Type.Integer({ minimum: QUANTITY_MIN, maximum: QUANTITY_MAX, description: 'The count to set, as PATCH sets it' })),
  delta: Type.Optional(Delta),
  ifMatch: Type.Optional(Type.String({ description: 'One If-Match value (an ETag such as "v7", or "*"): the change applies only to that version of the entry' })),
  reason: ReasonField,
};

/** One change of a batch, as the document shows it: quantity or delta, never both. */
export const BatchChange = Type.Object(batchChangeFields, {
  additionalProperties: false,
  // Each member typed, as every subschema of the document (the docs page's validator rejects one without a type), and
  // naming its field's type, so a generated client reads "quantity or delta" rather than an empty object.
  oneOf: [
    { type: 'object', required: ['quantity'], properties: { quantity: { type: 'integer' } } },
    { type: 'object', required: ['delta'], properties: { delta: { type: 'integer' } } },
  ],
});

/**
 * What the operation checks each change against: `oneOf` is left to its own check, which names the
 * fields, and petId (a number, or a bigint beyond 2^53) to its own, which keeps every digit.
 */
export const BatchChangeCheck = Type.Object({ ...batchChangeFields, petId: Type.Unknown() }, { additionalProperties: false });
export type BatchChangeCheck = Static<typeof BatchChangeCheck>;

/** The body of POST /v1/inventory/batch; its size bounds are BATCH_MAX_CHANGES, a setting, checked by the operation. */
export const InventoryBatch = Type.Object(
  {
    changes: Type.Array(BatchChange, { minItems: 1, description: 'The changes, each pet at most once; 1 to BATCH_MAX_CHANGES of them' }),
  },
  { additionalProperties: false },
);

/** An entry as a batch left it, with its version (the number of its ETag). */
export const VersionedItem = Type.Object(
  {
    petId: PetId,
    quantity: Quantity,
    status: PetStatus,
    ...HeldFields,
    version: Type.Integer({ minimum: 1, description: 'The entry\'s version after the change: its ETag is "v" and this number' }),
  },
  { additionalProperties: false },
);

/** The answer to an applied batch: every entry it changed, in the order of the changes. */
export const BatchResult = Type.Object({ items: Type.Array(VersionedItem) }, { additionalProperties: false });

/** The spec's Error object; `code` is one of the closed set of src/errors.ts. */
export const ErrorSchema = Type.Object(
  {
    code: Type.Unsafe<ErrorCode>({ type: 'string', enum: [...ERROR_CODES], description: 'Machine-readable error code' }),
    message: Type.String({ description: 'Human-readable description' }),
    status: Type.Integer({ description: 'The HTTP status code' }),
  },
  { additionalProperties: false },
);

/** One change of an entry's quantity (extension: the change history). */
export const HistoryItem = Type.Object(
  {
    petId: PetId,
    previousQuantity: Type.Integer({ minimum: QUANTITY_MIN, maximum: QUANTITY_MAX, description: 'The quantity before the change' }),
    quantity: Type.Integer({ minimum: QUANTITY_MIN, maximum: QUANTITY_MAX, description: 'The quantity the change set' }),
    at: Type.String({ format: 'date-time', description: 'When the change was committed (RFC 3339, UTC)' }),
    keyId: Type.String({ description: 'Id of the API key that made the change' }),
    keyName: Type.String({ description: 'Name of that API key when the change was made' }),
    requestId: Type.String({ description: 'X-Request-Id of the request that made the change' }),
    reason: Nullable(ChangeReason, { description: 'The reason sent with the change, or null' }),
  },
  { additionalProperties: false },
);

export const HistoryPage = Type.Object(
  {
    items: Type.Array(HistoryItem, { description: 'Changes, newest first' }),
    nextCursor: Nullable(Type.String(), { description: 'Pass as cursor for the next (older) page; null on the last page' }),
  },
  { additionalProperties: false },
);

/** A batch's Error object: the spec's, with the index of the change refused when one is (decisions 5.12). */
export const BatchErrorSchema = Type.Object(
  {
    ...ErrorSchema.properties,
    index: Type.Optional(Type.Integer({ minimum: 0, description: 'The position in changes of the change refused; absent when the refusal is not about one change' })),
  },
  { additionalProperties: false },
);
