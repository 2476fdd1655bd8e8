/**
 * Past this many entries in one write, a store tells the readers of changesSince to read the whole
 * list again rather than naming each entry: past it, one full read costs them less than lookups.
 */
export const BULK_WRITE = 10_000;
