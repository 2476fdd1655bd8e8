import { Type, type TSchemaOptions, type Static, type TSchema } from 'typebox';

/**
 * A value of `schema` or null, written `type: [T, "null"]` (an enum gains null too) rather than
 * `anyOf: [T, {type: "null"}]`: the same values, in the form the docs page's validator (Scalar's)
 * accepts; it rejects the `anyOf` form inside the document's components. `schema` must have one
 * `type` (no $ref): nullable references are spelled out where they are used.
 */
export function Nullable<T extends TSchema>(schema: T, options: TSchemaOptions = {}): ReturnType<typeof Type.Unsafe<Static<T> | null>> {
  const { type, enum: values, ...rest } = schema as { type?: unknown; enum?: unknown[] };
  if (typeof type !== 'string') throw new Error('Nullable needs a schema of one type');
  return Type.Unsafe<Static<T> | null>({ ...rest, type: [type, 'null'], ...(values !== undefined && { enum: [...values, null] }), ...options });
}
