import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import process from 'node:process';

/**
 * Runs test files, `concurrency` at a time, each in a `node` of its own (`argumentsOf(file)`), in
 * the order given: a file's whole output is printed at once when it ends, so files running side by
 * side never mix their lines. Resolves with each file's result, in the order they ended.
 *
 * `running` is the pool's view for a caller stopping the run: the files still running, each with
 * its process and what it printed so far.
 */
export function runPool({ files, concurrency, argumentsOf, cwd, running, write }) {
  const queue = [...files];
  const results = [];
  const lane = async () => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      if (running.stopped) return;
      results.push(await runFile(file, argumentsOf(file), cwd, running, write));
    }
  };
  return Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, lane)).then(() => results);
}

function runFile(file, args, cwd, running, write) {
  return new Promise((done) => {
    const started = performance.now();
    // Without the variable node --test sets in the files it runs: a run started from one (the runner's own test) is a run of its own, not a part of that file.
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = [];
    const entry = { child, output: () => Buffer.concat(output).toString() };
    running.files.set(file, entry);
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('error', (err) => output.push(Buffer.from(`${err.message}\n`)));
    child.on('close', (code, signal) => {
      running.files.delete(file);
      const seconds = (performance.now() - started) / 1000;
      const passed = code === 0;
      const how = passed ? 'passed' : `FAILED (${signal ?? `exit code ${code}`})`;
      write(`::: ${file}: ${how} in ${seconds.toFixed(1)} s\n${entry.output()}`);
      done({ file, passed, seconds, failures: passed ? '' : failingBlocks(entry.output()) });
    });
  });
}

/** How many lines of a failed file's failures the run's last lines repeat. */
const FAILURE_LINES = 80;

/**
 * The TAP blocks of the subtests that failed (each "not ok" line and its YAML, the error and its
 * stack), at most FAILURE_LINES lines: repeated at the end of the run, where a CI log that keeps
 * only its tail still shows why. Empty when the reporter is not TAP.
 */
export function failingBlocks(output) {
  const lines = output.split('\n');
  const kept = [];
  for (let i = 0; i < lines.length && kept.length < FAILURE_LINES; i++) {
    const failed = /^(\s*)not ok /.exec(lines[i]);
    if (!failed) continue;
    const end = `${failed[1]}  ...`;
    for (let j = i; j < lines.length && kept.length < FAILURE_LINES; j++) {
      kept.push(lines[j]);
      if (lines[j] === end) break;
    }
  }
  return kept.join('\n');
}
