import type { ChangeOutcome } from '../domain/inventory.js';
import type { PetStatus } from '../schemas/inventory.js';

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
