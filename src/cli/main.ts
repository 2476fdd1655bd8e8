import { ConfigError } from '../config.js';
import { commandGroup, type Command } from './command.js';
import { CliError, EXIT_USAGE, processIO, PROGRAM, type CliIO } from './io.js';
import { lazyCommand } from './lazy-command.js';

// The bin ends the process through it (io.ts says why).
export { endProcess } from './io.js';

const VERSION_FLAGS = ['--version', '-V'];

/** The top-level commands, each loaded when it runs (lazy-command.ts). */
export const COMMANDS: Record<string, Command> = {
  serve: lazyCommand('serve the API (what npm start runs)', async () => (await import('./serve.js')).serveCommand),
  keys: lazyCommand('create, list and revoke API keys', async () => (await import('./keys.js')).keysCommand),
  pets: lazyCommand(
    'create, list, adjust, import, export and retire inventory entries; show their history',
    async () => (await import('./pets.js')).petsCommand,
  ),
  events: lazyCommand('follow the change events of the store', async () => (await import('./events.js')).eventsCommand),
  webhooks: lazyCommand('add, list, test and manage webhook endpoints', async () => (await import('./webhooks.js')).webhooksCommand),
  reservations: lazyCommand('list, show and release reservations of stock', async () => (await import('./reservations.js')).reservationsCommand),
};

const cli = commandGroup({
  summary: 'the inventory service and its tools',
  description:
    "The stock-level service of a pet store, and the tools to run it.\nEvery command reads DATABASE_URL (default sqlite:./data/inventory.db) and INVENTORY_ENV.",
  options: '  -V, --version  print the version\n  -h, --help     show this help',
  commands: COMMANDS,
});

/** Runs the CLI; resolves to the process exit code, never throws. */
export async function main(argv: string[], io: CliIO = processIO): Promise<number> {
  try {
    if (argv[0] !== undefined && VERSION_FLAGS.includes(argv[0])) {
      if (argv.length > 1) throw new CliError(`${argv[0]} takes no arguments`, EXIT_USAGE);
      io.stdout(`${await packageVersion()}\n`);
      return 0;
    }
    return await cli.run(argv, io);
  } catch (err) {
    return reportFailure(err, io);
  }
}

/** package.json's version; loaded only when asked, and bundled into dist/ by the build. */
async function packageVersion(): Promise<string> {
  return (await import('../../package.json', { with: { type: 'json' } })).default.version;
}

/** One line on stderr; exit 2 for a wrong call (usage, options, settings), 1 for a failed operation. */
function reportFailure(err: unknown, io: CliIO): number {
  const code = (err as { code?: unknown }).code;
  const usage =
    err instanceof ConfigError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_')) || (err instanceof CliError && err.exitCode === EXIT_USAGE);
  // Some parseArgs messages run to several lines; the first says what is wrong.
  const message = err instanceof Error ? err.message.split('\n')[0] : String(err);
  io.stderr(`${PROGRAM}: ${message}\n`);
  if (err instanceof CliError) return err.exitCode;
  return usage ? EXIT_USAGE : 1;
}
