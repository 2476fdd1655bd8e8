/**
 * `npm run bench [-- --quick | --smoke]`: the service against a bare node:http baseline and the Express
 * peer, on SQLite and (when reachable) PostgreSQL. Prints the table; a full run also writes
 * bench/results.md. Never fails on a missed target: it says "not met".
 */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { createDatabase, describePostgres, postgresHost, postgresProblem, type Backend } from './databases.js';
import { cleanUp, installExitHandlers } from './lifecycle.js';
import { listRenderNotes } from './list-render.js';
import { LoadGenerator, pickLoadTool } from './load.js';
import { describeLoadTool, describeMachine, describePinning } from './machine.js';
import { HELP, parseOptions, type BenchOptions } from './options.js';
import { REPO_ROOT } from './processes.js';
import { renderNotes, renderTable, type Section } from './report.js';
import { catalogueSection } from './catalogue.js';
import { dashboardSection } from './dashboard.js';
import { docsSection } from './docs.js';
import { durableSection } from './durable.js';
import { eventsSection } from './events.js';
import { rateLimitSection } from './rate-limit.js';
import { reservationsSection } from './reservations.js';
import { scalingSection } from './scaling.js';
import { tillsSection } from './tills.js';
import { webhooksSection } from './webhooks-section.js';
import { BackendBench, describeLoads } from './scenarios.js';
import { serviceHasWorkers } from './servers.js';
import { storeProblem } from './seed.js';
import { startupSection } from './startup.js';

const RESULTS_FILE = resolve(REPO_ROOT, 'bench', 'results.md');
const TITLES: Record<Backend, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };
/** The --only scenarios run once per backend. */
const BACKEND_SCENARIOS = new Set<BenchOptions['only']>(['catalogue', 'durable', 'events', 'get', 'reservations', 'tills', 'webhooks']);

async function main(argv: string[]): Promise<number> {
  let options: BenchOptions | undefined;
  try {
    options = parseOptions(argv);
  } catch (err) {
    process.stderr.write(`bench: ${(err as Error).message}\n${HELP}`);
    return 2;
  }
  if (!options) {
    process.stdout.write(HELP);
    return 0;
  }
  const started = Date.now();
  const tool = pickLoadTool(options.load);
  const header = [
    `- Date: ${new Date().toISOString()}`,
    `- Machine: ${describeMachine()}`,
    `- Node: ${process.version}`,
    `- Mode: ${options.smoke ? 'smoke' : options.quick ? 'quick' : 'full'} (${options.warmupSeconds} s warm-up, then ${options.durationSeconds} s measured, per load)` +
      (options.smoke
        ? '; a smoke run proves the harness works, its figures mean nothing'
        : options.quick
          ? '; quick sizes are a tenth of the full ones, so the targets are shown for orientation only'
          : ''),
    `- Load generator: ${describeLoadTool(tool)}`,
    `- Pinning: ${describePinning()}`,
    `- Loads: ${describeLoads()}`,
  ];
  process.stdout.write(`${header.join('\n')}\n\n`);
  const hasWorkers = await serviceHasWorkers();
  if (!hasWorkers) process.stdout.write('serve --workers not available: the --workers 2 scenario is skipped\n\n');

  const load = new LoadGenerator(tool);
  const sections: Section[] = [];
  const show = (section: Section, only?: NonNullable<BenchOptions['only']>, backend?: Backend) => {
    if (only) section.command = againAlone(options, only, backend);
    sections.push(section);
    process.stdout.write(`${renderSection(section)}\n\n`);
  };
  try {
    if (options.only === undefined || options.only === 'startup') show(await startupSection(options.startupRounds), 'startup');
    for (const backend of options.only === undefined || BACKEND_SCENARIOS.has(options.only) ? options.backends : []) {
      const skip = backend === 'postgres' ? await postgresSkipReason() : undefined;
      if (options.only === undefined || options.only === 'get') {
        const section: Section = skip
          ? { title: TITLES[backend], rows: [], notes: [`PostgreSQL: skipped (${skip})`] }
          : await new BackendBench(backend, options, load, hasWorkers).run(TITLES[backend]);
        if (backend === 'postgres' && !skip) section.notes.unshift(await describePostgres());
        show(section, 'get', backend);
      }
      if (options.only === undefined || options.only === 'catalogue') {
        const catalogue = `Catalogue on ${TITLES[backend]} (${options.catalogueSize.toLocaleString('en-US')} entries)`;
        show(skip ? { title: catalogue, rows: [], notes: [`PostgreSQL: skipped (${skip})`] } : await catalogueSection(backend, catalogue, options.catalogueSize), 'catalogue', backend);
      }
      if (options.only === undefined || options.only === 'durable') {
        const durable = `Durable writes on ${TITLES[backend]}`;
        show(skip ? { title: durable, rows: [], notes: [`PostgreSQL: skipped (${skip})`] } : await durableSection(backend, durable, options, load), 'durable', backend);
      }
      if (options.only === undefined || options.only === 'events') {
        const events = `Change events on ${TITLES[backend]}`;
        show(skip ? { title: events, rows: [], notes: [`PostgreSQL: skipped (${skip})`] } : await eventsSection(backend, events, options, load), 'events', backend);
      }
      if (options.only === undefined || options.only === 'webhooks') {
        const webhooks = `Webhooks on ${TITLES[backend]}`;
        show(skip ? { title: webhooks, rows: [], notes: [`PostgreSQL: skipped (${skip})`] } : await webhooksSection(backend, webhooks, options, load), 'webhooks', backend);
      }
      if (options.only === undefined || options.only === 'tills') {
        const tills = `Tills on ${TITLES[backend]}`;
        show(skip ? { title: tills, rows: [], notes: [`PostgreSQL: skipped (${skip})`] } : await tillsSection(backend, tills, options), 'tills', backend);
      }
      if (options.only === undefined || options.only === 'reservations') {
        const reservations = `Reservations on ${TITLES[backend]}`;
        show(skip ? { title: reservations, rows: [], notes: [`PostgreSQL: skipped (${skip})`] } : await reservationsSection(backend, reservations, options), 'reservations', backend);
      }
    }
    if (options.only === undefined || options.only === 'ratelimit') {
      // One backend is enough: the limiter runs before the store is read.
      const backend = options.backends[0]!;
      show(await rateLimitSection(backend, `Rate limit shared through Redis (${TITLES[backend]})`, options, load), 'ratelimit', backend);
    }
    if ((options.only === undefined || options.only === 'scaling') && options.backends.includes('postgres')) {
      const skip = await postgresSkipReason();
      const scaling = 'Scaling on one PostgreSQL database';
      show(skip ? { title: scaling, rows: [], notes: [`PostgreSQL: skipped (${skip})`] } : await scalingSection(scaling, options, load), 'scaling');
    }
    if (options.only === undefined || options.only === 'dashboard') show(await dashboardSection(options), 'dashboard');
    if (options.only === undefined || options.only === 'docs') show(await docsSection(options), 'docs');
  } finally {
    await load.close();
    await cleanUp();
  }
  if (!options.only) show({ title: 'List cache (in process)', rows: [], notes: listRenderNotes(options.sizes) });
  const failures = sections.flatMap((s) => (s.failures ?? []).map((f) => `${s.title}: ${f}`));
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  if (options.quick || options.only) {
    process.stdout.write(`Run in ${seconds} s; bench/results.md left as it is (only a full run of everything writes it).\n`);
  } else {
    await writeFile(RESULTS_FILE, resultsMarkdown([...header, `- Wall time: ${seconds} s`], sections));
    process.stdout.write(`Full run in ${seconds} s; wrote bench/results.md.\n`);
  }
  if (failures.length === 0) return 0;
  process.stderr.write(`\nbench: FAILED: ${failures.length} scenario${failures.length === 1 ? '' : 's'} measured a wrong outcome:\n${failures.map((f) => `  - ${f}`).join('\n')}\n`);
  return 1;
}

/** Why the PostgreSQL half cannot run, or undefined when the server answers and the service can use it. */
async function postgresSkipReason(): Promise<string | undefined> {
  const problem = await postgresProblem();
  if (problem !== undefined) return `unreachable at ${postgresHost()}: ${problem}`;
  return storeProblem(await createDatabase('postgres', 'probe'));
}

function renderSection(section: Section): string {
  const parts = [`## ${section.title}`];
  if (section.command) parts.push(`Measured again alone, every ratio side by side in that run too: \`${section.command}\``);
  if (section.rows.length > 0) parts.push(renderTable(section));
  if (section.notes.length > 0) parts.push(renderNotes(section.notes));
  if (section.failures?.length) parts.push(section.failures.map((f) => `**FAILED: ${f}**`).join('\n'));
  return parts.join('\n\n');
}

/** The command that runs one scenario again, on one backend, in this run's mode. */
function againAlone(options: BenchOptions, only: NonNullable<BenchOptions['only']>, backend: Backend | undefined): string {
  const mode = options.smoke ? ' --smoke' : options.quick ? ' --quick' : '';
  return `npm run bench --${mode} --only ${only}${backend ? ` --backends ${backend}` : ''}${options.load ? ` --load ${options.load}` : ''}`;
}

function resultsMarkdown(header: string[], sections: Section[]): string {
  return [
    '# Benchmark results',
    '',
    'Written by `npm run bench` (a full run; `--quick` never writes this file). Every ratio compares numbers',
    'measured in this same run; req/s counts 2xx answers only. Targets from the performance issue.',
    '',
    ...header,
    '',
    ...sections.map((s) => `${renderSection(s)}\n`),
  ].join('\n');
}

installExitHandlers();
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  async (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
    await cleanUp();
    process.exit(1);
  },
);
