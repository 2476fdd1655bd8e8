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
