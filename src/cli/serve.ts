import cluster from 'node:cluster';
import { loadConfig, readSetting, SETTINGS } from '../config.js';
import { checkPortsFree } from '../port-in-use.js';
import type { CliIO } from './io.js';
import { parseCommandArgs, type Command } from './command.js';
import { helpOption, SETTING_FLAG_OPTIONS, settingFlagsHelp, settingOverrides } from './setting-flags.js';
import { createStoreIfMissing } from './store-access.js';

const HELP = `Usage: petstore-inventory serve [options]

Serves the inventory API (what "npm start" runs). Flags override environment variables.

Options:
${settingFlagsHelp()}
${helpOption('--demo', 'add a few demo pets when the store has none')}
${helpOption('-h, --help', 'show this help')}

On a store with no API keys, creates one inventory:write key and prints it once with curl examples.
SIGTERM or SIGINT stops it gracefully: in-flight requests finish, the store is closed, exit code 0.
With --workers above 1, the signal goes to the primary process, which stops every worker that way;
it restarts a worker that dies, and exits 1 if a worker cannot start.
`;

/**
 * Set to 1, a single-process `serve` opens its store with omitChangeEvents: a PATCH appends no
 * event. Not a setting (no one should run a service so): it exists only so that the bench can
 * measure what the event log costs a PATCH on the very build it measures with the log.
 */
export const BENCH_WITHOUT_EVENT_LOG = 'INVENTORY_BENCH_WITHOUT_EVENT_LOG';

export const serveCommand: Command = {
  summary: 'serve the API (what npm start runs)',
  async run(args: string[], io: CliIO): Promise<number> {
    const { values } = parseCommandArgs({
      args,
      strict: true,
      options: {
        ...SETTING_FLAG_OPTIONS,
        demo: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help) {
      io.stdout(HELP);
      return 0;
    }
    const config = loadConfig(io.env, settingOverrides(values));
    // WORKERS is no Config member (the other commands run one process), and a bad --workers is named as the flag.
    const [workersName, workersText] = values.workers === undefined ? ['WORKERS', io.env.WORKERS] : ['--workers', values.workers];
    const workers = readSetting(workersName, workersText, SETTINGS.WORKERS.value);
    const demo = values.demo ?? false;
    if (!cluster.isWorker) await checkPortsFree(config);
    // Made here, not by the server, so that "Created a new store" comes before the first-run key.
    if (!cluster.isWorker) await createStoreIfMissing(config.databaseUrl, io);
    // Loaded here, not above: the other commands and --help start without the server's modules.
    if (cluster.isWorker) await (await import('../cluster.js')).runWorker(config, io.stderr);
    else if (workers === 1) {
      const omitChangeEvents = io.env[BENCH_WITHOUT_EVENT_LOG] === '1';
      await (await import('../server.js')).startServer(config, { demo, print: io.stderr, omitChangeEvents });
    }
    else await (await import('../cluster.js')).startCluster(config, { workers, demo, print: io.stderr, log: io.stdout });
    // The server (or the cluster) keeps the process alive; signals end it (see server.ts, cluster.ts).
    return 0;
  },
};
