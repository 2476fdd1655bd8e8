/** The files that need the machine to themselves, run after the rest, one at a time. */
export const ALONE: ReadonlySet<string>;
/** `files` in the order to start them: `shared` several at a time, longest first; then `alone`, one at a time. */
export function runOrder(files: readonly string[]): { shared: string[]; alone: string[] };
