/** How long one test file may run before `npm test` fails it, unless the caller sets --test-timeout. */
export const FILE_TIMEOUT_MS: number;
/** Files at once when neither --concurrency nor TEST_CONCURRENCY says. */
export const DEFAULT_CONCURRENCY: number;
/** What `npm test` passes to node for one file: the caller's own node options, then the file. */
export function nodeArguments(options: readonly string[], file: string): string[];
/** Files at once: `--concurrency N` (taken out of `args`), else TEST_CONCURRENCY, else DEFAULT_CONCURRENCY. */
export function takeConcurrency(args: string[], env: Record<string, string | undefined>): number;
