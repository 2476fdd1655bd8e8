import type { Location } from '../../domain/import.js';
import { INT64_MAX, INT64_MIN, tryParsePetId } from '../../domain/pet-id.js';
import type { InventoryItem, PetStatus } from '../../schemas/inventory.js';
import { PET_STATUSES, QUANTITY_MAX, QUANTITY_MIN } from '../../schemas/values.js';
import type { ImportError } from './problems.js';

/** What a catalogue file gives of an entry: its count, never what reservations hold. */
export type Field = Exclude<keyof InventoryItem, 'reserved'>;
export const FIELD_NAMES: readonly Field[] = ['petId', 'quantity', 'status'];

/** How each field is written and checked; `pets add` uses the same rules for its options. */
export const ITEM_FIELDS: { [K in Field]: { rule: string; parse: (text: string) => Required<InventoryItem>[K] | undefined } } = {
  petId: {
    rule: `a decimal integer from ${INT64_MIN} to ${INT64_MAX}, without leading zeros or a plus sign`,
    parse: tryParsePetId,
  },
  quantity: { rule: `an integer from ${QUANTITY_MIN} to ${QUANTITY_MAX}`, parse: parseQuantityText },
  status: { rule: `one of ${PET_STATUSES.join(', ')}`, parse: parseStatusText },
};

/** Canonical decimal in QUANTITY_MIN..QUANTITY_MAX: the one form every input of quantity accepts. */
export function parseQuantityText(text: string): number | undefined {
  if (!/^(0|[1-9][0-9]{0,9})$/.test(text)) return undefined;
  const value = Number(text);
  return value >= QUANTITY_MIN && value <= QUANTITY_MAX ? value : undefined;
}

export function parseStatusText(text: string): PetStatus | undefined {
  return (PET_STATUSES as readonly string[]).includes(text) ? (text as PetStatus) : undefined;
}

/** "<name> must be <rule> (got <shown>)". */
export function invalidValueMessage(name: string, rule: string, got: string): string {
  return `${name} must be ${rule} (got ${got})`;
}

const MESSAGE_TEXT_MAX = 40;

/** Text from the file as a message shows it: cut short when long. */
export function clip(text: string): string {
  return text.length > MESSAGE_TEXT_MAX ? `${text.slice(0, MESSAGE_TEXT_MAX)}…` : text;
}

/** Quotes text from the file for a message, cut short when long. */
export function quoteForMessage(text: string): string {
  return JSON.stringify(clip(text));
}

/** A field's value as found in the file: `text` to check, or undefined when it has the wrong JSON type. */
export interface RawField {
  text: string | undefined;
  /** How the value is shown in a message. */
  got: string;
  /** Why `text` is undefined, such as "a number, not a string". */
  wrongType?: string;
}

/**
 * One entry's fields checked: the item, or every problem of the entry (each field's own location
 * from `fieldAt`; a missing field is at the entry).
 */
export function checkEntry(
  at: Location,
  raw: Partial<Record<Field, RawField>>,
  fieldAt: (field: Field) => Location = () => at,
): { item: InventoryItem } | { errors: ImportError[] } {
  const errors: ImportError[] = [];
  const check = <K extends Field>(field: K): InventoryItem[K] | undefined => {
    const value = raw[field];
    if (value === undefined) {
      errors.push({ ...at, field, message: `${field} is missing` });
      return undefined;
    }
    const { rule, parse } = ITEM_FIELDS[field];
    const parsed = value.text === undefined ? undefined : parse(value.text);
    if (parsed !== undefined) return parsed;
    const message = value.wrongType ? `${field} must be ${value.wrongType} (got ${value.got})` : invalidValueMessage(field, rule, value.got);
    errors.push({ ...fieldAt(field), field, message });
    return undefined;
  };
  const petId = check('petId');
  const quantity = check('quantity');
  const status = check('status');
  return petId !== undefined && quantity !== undefined && status !== undefined ? { item: { petId, quantity, status } } : { errors };
}
