import { randomUUID } from 'node:crypto';
import type { InventoryItem, PetStatus } from '../schemas/inventory.js';

/** Where something is in an import file: its line, and for JSON its 1-based position in the array. */
export interface Location {
  line: number;
  index?: number;
}

/** One entry read from an import file, and where it was. */
export interface ImportRow extends Location {
  item: InventoryItem;
}

/**
 * What a store refuses in the rows it was given, each naming its row: a petId the file already
 * had (`first`), an entry that already exists (without upsert), or, with upsert, an entry whose
 * stored status is not the file's (an import never changes a status).
 */
export type ImportConflict =
  | { kind: 'duplicate'; at: Location; petId: bigint; first: Location }
  | { kind: 'exists'; at: Location; petId: bigint }
  | { kind: 'status_differs'; at: Location; petId: bigint; stored: PetStatus; given: PetStatus };

/** The rows of one import, in batches, in file order, and what the reader made of the rest. */
export interface ImportSource {
  batches: AsyncIterable<readonly ImportRow[]>;
  /** Asked once the batches are exhausted: how many entries the reader itself refused. With any, the store applies nothing. */
  refused(): number;
}

/** How an import is applied, and who it is for the history. */
export interface ImportPlan {
  /** Entries that exist take the file's quantity (a stocktake); without it, an entry that exists is a conflict. */
  upsert: boolean;
  /** Written with every change of quantity an upsert makes. */
  change: { keyId: string; keyName: string; requestId: string; at: Date };
  /** Conflicts listed at most (the first, in file order); all are counted. */
  conflictsMax: number;
  /** Told when the store has every batch and checks them, then when it applies them. */
  onPhase?: (phase: 'checking' | 'applying') => void;
}

/**
 * What an import did: applied (a retired entry revived counts as created; an upsert's entry with
 * the file's quantity already is unchanged), or nothing at all, with the conflicts found.
 */
export type ImportOutcome =
  | { applied: true; created: number; updated: number; unchanged: number }
  | { applied: false; conflicts: ImportConflict[]; conflictRows: number };

/** The first conflicts of both lists (each in file order already), in file order, at most `max`. */
export function firstConflicts(a: readonly ImportConflict[], b: readonly ImportConflict[], max: number): ImportConflict[] {
  return [...a, ...b].sort((x, y) => x.at.line - y.at.line || (x.at.index ?? 0) - (y.at.index ?? 0)).slice(0, max);
}

/** A location as a store keeps it: the line, and the JSON position or null. */
export function locationOf(line: number | bigint, index: number | bigint | null | undefined): Location {
  return index === null || index === undefined ? { line: Number(line) } : { line: Number(line), index: Number(index) };
}

/**
 * Who an import is in the history rows its upsert writes: a key id that no API key can have
 * (theirs are `key_` and hex), and one request id per run, so a stocktake's rows can be found together.
 */
export function importChange(at: Date): ImportPlan['change'] {
  return { keyId: 'cli:import', keyName: 'import', requestId: `import-${randomUUID()}`, at };
}

/**
 * An import that failed after some of its chunks were written (a store that writes in chunks,
 * decisions 5.8): those stay written; running the same file again with --upsert writes the rest.
 */
export class ImportStoppedError extends Error {
  constructor(
    readonly written: { created: number; updated: number; unchanged: number },
    cause: unknown,
  ) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      `the import stopped part way (${reason}): ${written.created} entries created and ${written.updated} updated before it stay written; ` +
        'import the same file again with --upsert to write the rest',
      { cause },
    );
    this.name = 'ImportStoppedError';
  }
}
