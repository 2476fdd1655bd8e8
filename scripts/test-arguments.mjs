/**
 * How long one test file may run before the runner fails it, unless the caller sets --test-timeout:
 * Node 20 and 22 put the bound on each file as a whole, 24 on each test. Far above the longest file
 * on a slow, shared machine, it is no measure of speed: a file that hangs (a socket no one closes, a
 * wait on an event that never comes) fails after this instead of holding the whole run until CI stops
 * it and nothing says which file it was.
 */
export const FILE_TIMEOUT_MS = 10 * 60 * 1000;

/** What `npm test` passes to node: the files one at a time, after the caller's own node options. */
export function nodeArguments(options, files) {
  const timeout = options.some((option) => option.startsWith('--test-timeout')) ? [] : [`--test-timeout=${FILE_TIMEOUT_MS}`];
  return ['--import', 'tsx', '--test', '--test-concurrency=1', ...timeout, ...options, ...files];
}
