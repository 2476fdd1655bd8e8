import cluster from 'node:cluster';
import { loadConfig, readSetting, SETTINGS, type ConfigVariable } from '../config.js';
import type { CliIO } from './io.js';
import { parseCommandArgs, type Command } from './command.js';
import { createStoreIfMissing } from './store-access.js';

const HELP = `Usage: petstore-inventory serve [options]

Serves the inventory API (what "npm start" runs). Flags override environment variables.

Options:
  --port N             PORT (default 8080)
  --host HOST          HOST (default 0.0.0.0)
  --database-url URL   DATABASE_URL (default sqlite:./data/inventory.db)
  --log-level LEVEL    LOG_LEVEL: fatal, error, warn, info, debug, trace, silent (default info)
  --workers N|auto     WORKERS: processes serving on the one port, 1 to 64 or auto = one per CPU (default 1)
  --demo               add a few demo pets when the store has none
  -h, --help           show this help

On a store with no API keys, creates one inventory:write key and prints it once with curl examples.
SIGTERM or SIGINT stops it gracefully: in-flight requests finish, the store is closed, exit code 0.
With --workers above 1, the signal goes to the primary process, which stops every worker that way;
it restarts a worker that dies, and exits 1 if a worker cannot start.
`;

const FLAG_TO_VARIABLE: Record<string, ConfigVariable> = {
  port: 'PORT',
  host: 'HOST',
  'database-url': 'DATABASE_URL',
  'log-level': 'LOG_LEVEL',
};

export const serveCommand: Command = {
  summary: 'serve the API (what npm start runs)',
  async run(args: string[], io: CliIO): Promise<number> {
    const { values } = parseCommandArgs({
      args,
      strict: true,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'database-url': { type: 'string' },
        'log-level': { type: 'string' },
        workers: { type: 'string' },
        demo: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help) {
      io.stdout(HELP);
      return 0;
    }
    const overrides: Partial<Record<ConfigVariable, string>> = {};
    for (const [flag, variable] of Object.entries(FLAG_TO_VARIABLE)) {
      const value = values[flag as keyof typeof values];
      if (typeof value === 'string') overrides[variable] = value;
    }
    const config = loadConfig(io.env, overrides);
    // WORKERS is no Config member (the other commands run one process), and a bad --workers is named as the flag.
    const [workersName, workersText] = values.workers === undefined ? ['WORKERS', io.env.WORKERS] : ['--workers', values.workers];
    const workers = readSetting(workersName, workersText, SETTINGS.WORKERS.value);
    const demo = values.demo ?? false;
    // Made here, not by the server, so that "Created a new store" comes before the first-run key.
    if (!cluster.isWorker) await createStoreIfMissing(config.databaseUrl, io);
    // Loaded here, not above: the other commands and --help start without the server's modules.
    if (cluster.isWorker) await (await import('../cluster.js')).runWorker(config, io.stderr);
    else if (workers === 1) await (await import('../server.js')).startServer(config, { demo, print: io.stderr });
    else await (await import('../cluster.js')).startCluster(config, { workers, demo, print: io.stderr, log: io.stdout });
    // The server (or the cluster) keeps the process alive; signals end it (see server.ts, cluster.ts).
    return 0;
  },
};
