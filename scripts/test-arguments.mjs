import { availableParallelism } from 'node:os';

/**
 * How long one test file may run before the runner fails it, unless the caller sets --test-timeout:
 * Node 20 and 22 put the bound on each file as a whole, 24 on each test. Far above the longest file
 * on a slow, shared machine, it is no measure of speed: a file that hangs (a socket no one closes, a
 * wait on an event that never comes) fails after this instead of holding the whole run until CI stops
 * it and nothing says which file it was. The longest file (test/operations/inventory.test.ts) takes
 * 40 s alone but has taken 8 to 10 minutes inside a whole CI run on a slow day, every lane beside it:
 * twice that.
 */
export const FILE_TIMEOUT_MS = 20 * 60 * 1000;

/**
 * How many files run at once when neither --concurrency nor TEST_CONCURRENCY says: twice the cores,
 * as a test file mostly waits on the other end of a socket (a server process, PostgreSQL, Chromium).
 */
export const DEFAULT_CONCURRENCY = 2 * availableParallelism();

/** What `npm test` passes to node for one file: the caller's own node options, then the file. */
export function nodeArguments(options, file) {
  const timeout = options.some((option) => option.startsWith('--test-timeout')) ? [] : [`--test-timeout=${FILE_TIMEOUT_MS}`];
  return ['--import', 'tsx', '--test', ...timeout, ...options, file];
}

/** Files at once: `--concurrency N` (taken out of `args`), else TEST_CONCURRENCY, else DEFAULT_CONCURRENCY. */
export function takeConcurrency(args, env) {
  let raw = env.TEST_CONCURRENCY;
  let from = 'TEST_CONCURRENCY';
  for (let i = args.findIndex(isConcurrency); i >= 0; i = args.findIndex(isConcurrency)) {
    const [flag] = args.splice(i, 1);
    raw = flag.includes('=') ? flag.slice(flag.indexOf('=') + 1) : args.splice(i, 1)[0];
    from = '--concurrency';
  }
  if (raw === undefined || raw === '') return DEFAULT_CONCURRENCY;
  if (!/^[1-9][0-9]*$/.test(raw)) throw new Error(`${from} must be a whole number of files from 1 up, not "${raw}"`);
  return Number(raw);
}

function isConcurrency(arg) {
  return arg === '--concurrency' || arg.startsWith('--concurrency=');
}
