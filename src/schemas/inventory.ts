import { Type, type Static } from 'typebox';
import { ERROR_CODES, type ErrorCode } from '../errors.js';

export const QUANTITY_MIN = 0;
export const QUANTITY_MAX = 2147483647;

/** Status of the pet (spec: PetStatus). */
export const PET_STATUSES = ['available', 'pending', 'sold'] as const;
export const PetStatus = Type.Unsafe<(typeof PET_STATUSES)[number]>({
  type: 'string',
  enum: [...PET_STATUSES],
  description: 'Status of the pet',
});
export type PetStatus = Static<typeof PetStatus>;

/** int64 in JSON, bigint in code: serialised digit for digit, never through a float. */
export const PetId = Type.Unsafe<bigint>({
  type: 'integer',
  format: 'int64',
  description: 'Identifier of the animal this entry tracks',
});

export const Quantity = Type.Integer({
  minimum: QUANTITY_MIN,
  maximum: QUANTITY_MAX,
  description: 'Current stock count',
});

export const InventoryItem = Type.Object(
  {
    petId: PetId,
    quantity: Quantity,
    status: PetStatus,
  },
  { additionalProperties: false },
);
export type InventoryItem = Static<typeof InventoryItem>;

export const InventoryList = Type.Array(InventoryItem);

export const InventoryUpdate = Type.Object(
  {
    quantity: Type.Integer({
      minimum: QUANTITY_MIN,
      maximum: QUANTITY_MAX,
      description: 'The new stock count (the value the entry is to hold)',
    }),
  },
  { additionalProperties: false },
);
export type InventoryUpdate = Static<typeof InventoryUpdate>;

/** The spec's Error object; `code` is the closed set of PD 4.2. */
export const ErrorSchema = Type.Object(
  {
    code: Type.Unsafe<ErrorCode>({ type: 'string', enum: [...ERROR_CODES], description: 'Machine-readable error code' }),
    message: Type.String({ description: 'Human-readable description' }),
    status: Type.Integer({ description: 'The HTTP status code' }),
  },
  { additionalProperties: false },
);
