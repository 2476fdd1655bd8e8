import { constants as osConstants } from 'node:os';
import { stopRequests } from '../stop-signals.js';
/** The name every error line starts with; the message after it never starts with it again. */
export const PROGRAM = 'petstore-inventory';

/** Where a command writes; tests pass their own to read what a command printed. */
export interface CliIO {
  env: Readonly<Record<string, string | undefined>>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** stdout as a stream, for output written as it is read and never held whole (pets export); absent, `stdout` gets it in pieces. */
  stdoutStream?: NodeJS.WritableStream;
  /** When stderr is a terminal, its width: a progress display redraws one line in place there, and prints lines anywhere else. */
  stderrTerminal?: { columns: number } | undefined;
  /** Ends a command that runs until stopped (events tail); absent, SIGINT (Ctrl-C) and SIGTERM do. */
  stopSignal?: AbortSignal;
}

export const processIO: CliIO = {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stdoutStream: process.stdout,
  get stderrTerminal() {
    return process.stderr.isTTY ? { columns: process.stderr.columns } : undefined;
  },
};

/**
 * The signal that stops a command that runs until stopped: the IO's own, or one that SIGINT and
 * SIGTERM abort (and no longer end the process by themselves) until `release` is called. A copy of
 * the first signal (stop-signals.ts: the terminal's and npm's, or timeout's to the process and
 * again to its group) is no new request, and is ignored even after `release`, as the command ends;
 * a later one exits at once, as the signal would.
 */
export function stopSignalOf(io: Pick<CliIO, 'stopSignal'>): { signal: AbortSignal; release: () => void } {
  if (io.stopSignal) return { signal: io.stopSignal, release: () => {} };
  const controller = new AbortController();
  const requestOf = stopRequests();
  const handle = (signal: NodeJS.Signals) => {
    const request = requestOf(signal);
    if (request === 'stop') {
      stopSignalled = true;
      controller.abort();
    }
    else if (request === 'stop-now') process.exit(128 + osConstants.signals[signal]);
  };
  process.on('SIGINT', handle).on('SIGTERM', handle);
  return {
    signal: controller.signal,
    release: () => {
      if (!controller.signal.aborted) process.off('SIGINT', handle).off('SIGTERM', handle);
    },
  };
}

/** Whether a stop signal reached this process through stopSignalOf: it then ends by endProcess's exit. */
let stopSignalled = false;

/**
 * Ends the process that ran the CLI with `code`: by itself as usual, but at once (stdout and
 * stderr flushed) after a stop signal. Why: a process that ends by itself stops handling signals
 * before it is gone, and a copy of the stop signal arriving then (timeout's, to its group) would
 * kill it; process.exit keeps the handlers until the end.
 */
export function endProcess(code: number): void {
  process.exitCode = code;
  if (stopSignalled) process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

/** A failure the CLI reports as one line on stderr and exit code `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Exit codes: 0 ok, 1 the command failed, 2 it was called wrongly. */
export const EXIT_USAGE = 2;
