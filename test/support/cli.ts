import { main } from '../../src/cli/main.js';
import type { CliIO } from '../../src/cli/io.js';

/** What one in-process run of the CLI gave: its exit code and everything it printed. */
export interface Run {
  code: number;
  out: string;
  err: string;
}

/** Runs the CLI in-process with `env` as its whole environment (and any other part of its IO given), capturing what it prints. */
export async function runCliWith(env: Record<string, string>, argv: readonly string[], io: Partial<CliIO> = {}): Promise<Run> {
  let out = '';
  let err = '';
  const code = await main([...argv], { env, stdout: (s) => (out += s), stderr: (s) => (err += s), ...io });
  return { code, out, err };
}

/** Runs the CLI in-process with `env` as its whole environment. */
export function runCli(env: Record<string, string>, ...argv: string[]): Promise<Run> {
  return runCliWith(env, argv);
}

/** Runs the CLI in-process against one store: DATABASE_URL is its whole environment. */
export function runOn(databaseUrl: string, ...argv: string[]): Promise<Run> {
  return runCliWith({ DATABASE_URL: databaseUrl }, argv);
}

/** What an import printed on stderr without its progress lines, which come only when it runs longer than LINE_EVERY_MS (as on a loaded machine). */
export function withoutProgress(err: string): string {
  return err.replace(/^import: .*\n/gm, '');
}
