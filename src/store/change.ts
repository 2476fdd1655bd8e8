import type { PetStatus } from '../schemas/inventory.js';
import type { ChangeOutcome, InventoryEntry, VersionCondition } from './store.js';

/**
 * What a change does to the entry it finds, the rule both backends apply inside their
 * transaction: no entry is not_found (before any precondition, RFC 9110 13.2.1), a condition
 * that fails is precondition_failed, anything else applies.
 */
export function judgeChange(
  current: InventoryEntry | undefined,
  condition: VersionCondition | undefined,
): { kind: 'apply'; current: InventoryEntry } | Exclude<ChangeOutcome, { kind: 'updated' }> {
  if (!current) return { kind: 'not_found' };
  if (condition && !condition.anyVersion && !condition.versions.includes(current.version)) {
    return { kind: 'precondition_failed', entry: current };
  }
  return { kind: 'apply', current };
}

interface StoredOutcome {
  kind: ChangeOutcome['kind'];
  entry?: { petId: string; quantity: number; status: PetStatus; version: number };
}

/** An outcome as stored for idempotent replays: JSON with the petId as a string, so every int64 survives. */
export function encodeOutcome(outcome: ChangeOutcome): string {
  const stored: StoredOutcome = { kind: outcome.kind };
  if (outcome.kind !== 'not_found') {
    const { item, version } = outcome.entry;
    stored.entry = { petId: item.petId.toString(), quantity: item.quantity, status: item.status, version };
  }
  return JSON.stringify(stored);
}

export function decodeOutcome(text: string): ChangeOutcome {
  const stored = JSON.parse(text) as StoredOutcome;
  if (stored.kind === 'not_found' || !stored.entry) return { kind: 'not_found' };
  const { petId, quantity, status, version } = stored.entry;
  return { kind: stored.kind, entry: { item: { petId: BigInt(petId), quantity, status }, version } };
}
