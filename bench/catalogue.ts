import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueApiKey } from '../src/auth/issue-key.js';
import { openStore } from '../src/store/open.js';
import { bareLoad, readRows } from './bare-import.js';
import { runCli } from './cli-run.js';
import { createDatabase, type Backend } from './databases.js';
import { IMPORT_PATCHES, importWhileServing, ON_SALE, whileServing } from './import-serving.js';
import { onCleanup } from './lifecycle.js';
import { downloadList, type Coding } from './list-download.js';
import type { LoadResult } from './load-spec.js';
import { peakRss, ratio, type Check, type Row, type Section } from './report.js';
import { writeBenchCatalogue } from './seed.js';
import { startServer } from './servers.js';

/**
 * The targets of the catalogue scenario: the import against the bare load of the same rows (entries +
 * events), the issue's 0.8; and the service's peak RSS having served the whole list, under the issue's 1 GB.
 */
export const CATALOGUE_TARGETS = { importVsBare: 0.8, importRssMiB: 300, serviceRssMiB: 1024 } as const;

const CODINGS: readonly Coding[] = ['identity', 'gzip', 'br'];

/**
 * The catalogue at `size` entries on one backend: `pets import` of an exported CSV file into a live
 * store, PATCHes answered beside it, against a bare load of the same rows (run in the same bench),
 * its peak RSS; `pets export` of the result,
 * checked to be the same bytes as the file imported; and GET /v1/inventory of all of it, in each
 * content coding, the first time (the list loaded, or compressed) and then from the cache.
 */
export async function catalogueSection(backend: Backend, title: string, size: number): Promise<Section> {
  const dir = await mkdtemp(join(tmpdir(), 'inventory-bench-catalogue-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'catalogue.csv');
  // The pets on sale during the import come first: the file's follow them.
  await writeBenchCatalogue(file, size, ON_SALE);
  const entries = `${size.toLocaleString('en-US')} entries`;
  const rows: Row[] = [];
  const notes: string[] = [];

  const source = await readRows(file);
  const bare = await bareLoad(backend, await createDatabase(backend, `bare_${size}`), source, 'inventory');
  const bareEvents = await bareLoad(backend, await createDatabase(backend, `bare_events_${size}`), source, 'inventory+events');
  const minimal = (await bareLoad(backend, await createDatabase(backend, `bare_min_${size}`), source, 'minimal')).rate;
  // The same bare load while the service answers the import's PATCHes on a database of its own: what that load costs a bare program.
  const bareTarget = await createDatabase(backend, `bare_served_${size}`);
  const { result: bareServed, patches: bareSales } = await whileServing(await createDatabase(backend, `bare_sales_${size}`), () => bareLoad(backend, bareTarget, source, 'inventory+events'));
  source.length = 0;
  rows.push(
    { scenario: `import ${entries} (CSV)`, server: 'bare load: entries', checks: [perSecond(bare.rate, 'rows'), timeTaken(bare.seconds, bare.cpuSeconds)] },
    {
      scenario: `import ${entries} (CSV)`,
      server: 'bare load: entries + events',
      checks: [perSecond(bareEvents.rate, 'rows'), ratio(bareEvents.rate / bare.rate, 'bare entries'), timeTaken(bareEvents.seconds, bareEvents.cpuSeconds)],
    },
    {
      scenario: `import ${entries} (CSV)`,
      server: `bare load: entries + events, ${IMPORT_PATCHES.rate} PATCH/s served beside it`,
      checks: [
        perSecond(bareServed.rate, 'rows'),
        ratio(bareServed.rate / bareEvents.rate, 'the same alone'),
        timeTaken(bareServed.seconds, bareServed.cpuSeconds),
        salesBeside(bareSales, bareServed.seconds),
      ],
    },
  );

  const databaseUrl = await createDatabase(backend, `catalogue_${size}`);
  const { imported, patches } = await importWhileServing(databaseUrl, file);
  if (!imported.stdout.startsWith(`read ${size.toLocaleString('en-US')}, created ${size.toLocaleString('en-US')}, `)) {
    throw new Error(`pets import did not create every entry: ${imported.stdout}`);
  }
  const importRate = size / imported.seconds;
  rows.push({
    scenario: `import ${entries} (CSV)`,
    server: `pets import, ${IMPORT_PATCHES.rate} PATCH/s served beside it`,
    checks: [
      perSecond(importRate, 'rows'),
      ratio(importRate / bareEvents.rate, 'bare entries + events', CATALOGUE_TARGETS.importVsBare),
      ratio(importRate / bareServed.rate, `bare entries + events, ${IMPORT_PATCHES.rate} PATCH/s served beside it`),
      ratio(importRate / bare.rate, 'bare entries'),
      timeTaken(imported.seconds, imported.cpuSeconds),
      peakRss(imported.peakRssBytes, CATALOGUE_TARGETS.importRssMiB),
    ],
  });
  rows.push(patchesDuringImport(patches, entries));
  const how = backend === 'sqlite' ? 'prepared inserts, one transaction per 10,000 rows' : 'one COPY per table and 10,000 rows (with events, both in one transaction)';
  notes.push(
    `import: the wall time of the whole command, start-up included (${imported.seconds.toFixed(2)} s); its own summary: ${imported.stdout.trim()}`,
    `import into a live store: the service serves the same database meanwhile (on the server core), with pets 1 to ${ON_SALE} on sale (the file's come after them), ` +
      `and ${IMPORT_PATCHES.rate} PATCH/s of those pets, evenly paced from the load generator's process on the load core (up to ${IMPORT_PATCHES.connections} in flight), ` +
      'go to it from the import\'s start to its exit; the PATCH row counts them and their answers (req/s over the import\'s time). ' +
      'The import\'s rate is measured in that same run; the bare loads run alone, but one: "+ events, served beside it" runs while the service answers the same PATCHes, ' +
      'as paced, on a database of its own (the pacer in a process of its own on the load core, the bare load in the bench process), for what that load costs a bare program ' +
      (backend === 'postgres' ? '(every database of a PostgreSQL server shares its WAL, so another database\'s commits slow a load as the same database\'s do). ' : '(the service on the server core, its commits on the same disk). ') +
      'The pets on sale are retired afterwards, so the export and the list are the file\'s entries alone',
    `bare load: the same rows, parsed beforehand, by ${how}, into the service's inventory table of a fresh database (its columns, checks and indexes); ` +
      '"+ events" also writes each entry\'s creation event into the service\'s event table, as the import does (a new entry has no history row: history records changes of a count), ' +
      'and is the comparison the target is for: the import with its event log on against a bare load with the same rows written; ' +
      `into a table of the three columns and the primary key alone it runs at ${Math.round(minimal).toLocaleString('en-US')} rows/s, ` +
      `of which the import is ${(importRate / minimal).toFixed(2)}×`,
    `CPU: user plus system time of every thread, the import's process's over its whole command, the bench's own over a bare load` +
      (backend === 'postgres' ? "; the database server's work is in neither" : ''),
  );

  const exportFile = join(dir, 'export.csv');
  const exported = await runCli(databaseUrl, ['pets', 'export', exportFile]);
  const [original, copy] = await Promise.all([readFile(file), readFile(exportFile)]);
  if (!original.equals(copy)) throw new Error(`pets export did not write back the bytes imported (${copy.length} against ${original.length})`);
  rows.push({ scenario: `export ${entries} (CSV)`, server: 'service: pets export', checks: [perSecond(size / exported.seconds, 'rows'), { text: 'same bytes as imported' }] });

  rows.push(...(await listDownloads(databaseUrl, entries)));
  return { title, rows, notes };
}

/**
 * The PATCHes answered beside a bare load, which must have gone on at their pace all along: a pacer
 * that fell far behind (starved of CPU) would make the row a bare load alone under another name.
 */
function salesBeside(patches: LoadResult, seconds: number): Check {
  const asked = IMPORT_PATCHES.rate * seconds;
  // A load of a moment (a smoke run's) has too few ticks of the pacer to judge.
  if (asked >= 50 && patches.ok < asked / 2) throw new Error(`only ${patches.ok} PATCHes were answered beside the bare load, of about ${Math.round(asked)} sent at ${IMPORT_PATCHES.rate}/s`);
  return { text: `${patches.ok.toLocaleString('en-US')} PATCHes answered meanwhile, ${patches.failed} failed` };
}

/** GET /v1/inventory of the whole catalogue in each coding: size, first time, then cached; and the server's peak RSS. */
async function listDownloads(databaseUrl: string, entries: string): Promise<Row[]> {
  const store = await openStore(databaseUrl);
  const { key } = await issueApiKey(store.keys, { name: 'bench', environment: 'production', scopes: ['inventory:read'], expiresAt: null }).finally(() => store.close());
  const server = await startServer('service', { databaseUrl, key, pinned: false });
  try {
    const rows: Row[] = [];
    for (const coding of CODINGS) {
      const first = await downloadList(server.baseUrl, key, coding);
      const again = [await downloadList(server.baseUrl, key, coding), await downloadList(server.baseUrl, key, coding)].sort((a, b) => a.seconds - b.seconds)[0]!;
      // With metrics on, the service's first scrape (startServer waits for it) counts the entries, which loads the list.
      const what = coding === 'identity' ? 'first GET (the list loaded at the first metrics scrape)' : `first ${coding} GET compresses it`;
      rows.push({
        scenario: `GET /v1/inventory, ${entries}`,
        server: coding,
        checks: [{ text: size(first.bytes) }, { text: `${what}: ${first.seconds.toFixed(2)} s` }, { text: `cached: ${again.seconds.toFixed(3)} s` }],
      });
    }
    const rss = { ...peakRss(server.peakRssBytes(), CATALOGUE_TARGETS.serviceRssMiB), target: `< ${CATALOGUE_TARGETS.serviceRssMiB / 1024} GB` };
    rows.push({ scenario: `GET /v1/inventory, ${entries}`, server: 'service after the GETs', checks: [rss] });
    return rows;
  } finally {
    await server.stop();
  }
}

function size(bytes: number): string {
  return bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${(bytes / 1e3).toFixed(1)} kB`;
}

/** The PATCHes sent while the import ran: every one must be answered 2xx, and at least one sent. */
function patchesDuringImport(patches: LoadResult, entries: string): Row {
  return {
    scenario: `PATCH during the import of ${entries}`,
    server: 'service, same database',
    result: patches,
    checks: [
      {
        text: `${patches.ok.toLocaleString('en-US')} answered 2xx, ${patches.failed.toLocaleString('en-US')} failed${failureReasons(patches)}`,
        target: 'some answered, none failed',
        met: patches.ok > 0 && patches.failed === 0,
      },
    ],
  };
}

/** The failures by reason, most first: " (157: 503 STORE_TIMEOUT)". */
function failureReasons(result: LoadResult): string {
  const reasons = Object.entries(result.failures ?? {}).sort(([, a], [, b]) => b - a);
  return reasons.length === 0 ? '' : ` (${reasons.map(([reason, count]) => `${count.toLocaleString('en-US')}: ${reason}`).join(', ')})`;
}

/** Wall time and CPU time side by side: how much of the wall time the process itself computed. */
function timeTaken(seconds: number, cpuSeconds: number | undefined): Check {
  return { text: `${seconds.toFixed(2)} s wall, ${cpuSeconds === undefined ? 'CPU unknown' : `${cpuSeconds.toFixed(2)} s CPU (all threads)`}` };
}

function perSecond(rate: number, unit: string): Check {
  return { text: `${Math.round(rate).toLocaleString('en-US')} ${unit}/s` };
}
