/** How long one test file may run before `npm test` fails it, unless the caller sets --test-timeout. */
export const FILE_TIMEOUT_MS: number;
/** What `npm test` passes to node: the files one at a time, after the caller's own node options. */
export function nodeArguments(options: readonly string[], files: readonly string[]): string[];
