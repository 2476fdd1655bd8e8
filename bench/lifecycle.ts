import type { ChildProcess } from 'node:child_process';

/** Children still running; the exit hook kills them so that no server outlives the harness. */
const children = new Set<ChildProcess>();
/** Undone last-in first-out: databases and directories created during the run. */
const cleanups: (() => Promise<void>)[] = [];
let cleaningUp: Promise<void> | undefined;

/** Remembers a child so that it is killed on every way out, including errors and signals. */
export function trackChild(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

/** Registers an undo step (drop a database, remove a directory) for the end of the run. */
export function onCleanup(fn: () => Promise<void>): void {
  cleanups.push(fn);
}

/** Kills every child, then runs the undo steps once; safe to call more than once. */
export function cleanUp(): Promise<void> {
  cleaningUp ??= (async () => {
    killChildren();
    for (const fn of cleanups.reverse()) {
      await fn().catch((err: unknown) => process.stderr.write(`bench: cleanup failed: ${(err as Error).message}\n`));
    }
  })();
  return cleaningUp;
}

function killChildren(): void {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** SIGINT/SIGTERM clean up and exit non-zero; a plain exit still kills the children synchronously. */
export function installExitHandlers(): void {
  process.once('exit', killChildren);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}: stopping servers and load generators\n`);
      void cleanUp().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }
}
