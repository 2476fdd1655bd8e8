import type { ChildProcess } from 'node:child_process';

/** The files still running, each with its process and what it printed so far; `stopped` once no more may start. */
export interface Running {
  stopped: boolean;
  files: Map<string, { child: ChildProcess; output: () => string }>;
}

export interface FileResult {
  file: string;
  passed: boolean;
  seconds: number;
  /** A failed file's failing tests as TAP printed them (at most 80 lines); empty when it passed. */
  failures: string;
}

/** Runs test files `concurrency` at a time in the order given, each file's output printed whole when it ends. */
export function runPool(options: {
  files: readonly string[];
  concurrency: number;
  argumentsOf: (file: string) => string[];
  cwd: string;
  running: Running;
  write: (text: string) => void;
}): Promise<FileResult[]>;

/** The TAP blocks of the failing subtests in a file's output, at most 80 lines. */
export function failingBlocks(output: string): string;
