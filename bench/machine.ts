import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem, type } from 'node:os';
import { resolve } from 'node:path';
import type { LoadTool } from './load.js';
import { PINNING, REPO_ROOT } from './processes.js';

/** What the numbers were measured on, for the header of the results. */
export function describeMachine(): string {
  const model = cpus()[0]?.model.trim() || 'unknown CPU';
  return `${model}, ${availableParallelism()} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${type()} ${release()}`;
}

export function describeLoadTool(tool: LoadTool): string {
  if (tool === 'wrk') {
    // wrk -v prints its version (and exits non-zero).
    const version = /^wrk \S+/.exec(spawnSync('wrk', ['-v'], { encoding: 'utf8' }).stdout)?.[0] ?? 'wrk';
    return `${version}; the mixed load's fixed-rate PATCHes: an evenly paced node:http client`;
  }
  const { version } = JSON.parse(readFileSync(resolve(REPO_ROOT, 'node_modules', 'autocannon', 'package.json'), 'utf8')) as { version: string };
  return `autocannon ${version} in a child process of its own; the mixed load's fixed-rate PATCHes: an evenly paced node:http client in the same process`;
}

export function describePinning(): string {
  return PINNING
    ? `servers on core ${PINNING.server}, load generator on core ${PINNING.load} (taskset); the --workers comparison is unpinned`
    : 'none (taskset missing or a single core): server and load generator share the cores';
}

/** The machine's load averages (1, 5, 15 min) now: other work on the same cores slows every figure. */
export function describeLoadAverage(): string {
  return `load average ${loadavg()
    .map((n) => n.toFixed(1))
    .join(', ')}`;
}
