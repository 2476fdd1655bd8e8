import { ConfigError } from '../config.js';
import { commandGroup } from './command.js';
import { eventsCommand } from './events.js';
import { CliError, EXIT_USAGE, processIO, PROGRAM, type CliIO } from './io.js';
import { keysCommand } from './keys.js';
import { petsCommand } from './pets.js';
import { serveCommand } from './serve.js';
import { webhooksCommand } from './webhooks.js';

const VERSION_FLAGS = ['--version', '-V'];

const cli = commandGroup({
  summary: 'the inventory service and its tools',
  description:
    "The stock-level service of a pet store, and the tools to run it.\nEvery command reads DATABASE_URL (default sqlite:./data/inventory.db) and INVENTORY_ENV.",
  options: '  -V, --version  print the version\n  -h, --help     show this help',
  commands: { serve: serveCommand, keys: keysCommand, pets: petsCommand, events: eventsCommand, webhooks: webhooksCommand },
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
