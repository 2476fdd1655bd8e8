import { availableParallelism } from 'node:os';
import { ChildRunner } from './child-runner.js';
import type { LoadJob } from './load-runner.js';
import type { LoadResult, LoadSpec } from './load-spec.js';
import { runWrk, wrkTiming, type WindowHooks } from './load-wrk.js';
import { hasCommand, PINNING } from './processes.js';

export type LoadTool = 'wrk' | 'autocannon';

/** wrk when installed (it is lighter per request than autocannon); autocannon otherwise. */
export function pickLoadTool(requested: LoadTool | undefined): LoadTool {
  if (requested === 'wrk' && !hasCommand('wrk')) throw new Error('--load wrk: wrk is not installed');
  return requested ?? (hasCommand('wrk') ? 'wrk' : 'autocannon');
}

/** Drives loads with one tool; autocannon and the paced generator run in long-lived child processes. */
export class LoadGenerator {
  readonly tool: LoadTool;
  readonly #runners = new Map<string, ChildRunner<Omit<LoadJob, 'id'>, LoadResult>>();

  constructor(tool: LoadTool) {
    this.tool = tool;
  }

  /**
   * `pinned`: on the load core (when pinning is available), else wherever the OS puts it.
   * `window`: called right before and after the measured window; wrk only (its warm-up is a run of
   * its own, while autocannon's is the start of one continuous run in another process).
   */
  async run(spec: LoadSpec, pinned = true, window?: WindowHooks): Promise<LoadResult> {
    // wrk cannot hold a fixed rate: rate-limited loads always go to the runner's paced generator.
    if (this.tool === 'wrk' && spec.rate === undefined) {
      return runWrk(spec, pinned && PINNING ? 1 : availableParallelism(), pinned ? 'load' : undefined, window);
    }
    if (window) throw new Error('only wrk at full speed can report its measured window (use --load wrk)');
    // The paced generator gets a process of its own: next to a saturated autocannon its timings would be the generator's.
    const key = `${pinned ? 'pinned' : 'unpinned'} ${spec.rate === undefined ? 'full speed' : 'paced'}`;
    let runner = this.#runners.get(key);
    if (!runner) this.#runners.set(key, (runner = new ChildRunner('bench/load-runner.ts', 'load generator', pinned)));
    return runner.run({ spec });
  }

  /** The warm-up and window a full-speed load really gets (wrk rounds to whole seconds), to line a second load up with it. */
  timing(spec: Pick<LoadSpec, 'warmupSeconds' | 'durationSeconds'>): { warmupSeconds: number; durationSeconds: number } {
    return this.tool === 'wrk' ? wrkTiming(spec) : { warmupSeconds: spec.warmupSeconds, durationSeconds: spec.durationSeconds };
  }

  async close(): Promise<void> {
    await Promise.all([...this.#runners.values()].map((r) => r.close()));
    this.#runners.clear();
  }
}
