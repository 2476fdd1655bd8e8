import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { createTestDatabase } from '../support/backends.js';
import { freePort, isAlive, sleep } from '../support/process.js';
import { httpAnswer, httpDifference, matchesShown } from './expected-output.js';
import { ROOT, steps, type CodeBlock } from './markdown.js';
import { ShellSession } from './shell.js';

/** A command that starts a server: run in the background, and waited for until it listens. */
const SERVER_COMMAND = /^(?:[A-Z_]+=\S+\s+)*(?:npm start|\.\/bin\/petstore-inventory serve)\b/;
/** A port a document names: localhost:8080, PORT=8081 (METRICS_PORT=9464 too), --port 8082. */
const NAMED_PORT = /localhost:(\d{2,5})\b|\b[A-Z_]*PORT=(\d{2,5})\b|--port[ =](\d{2,5})\b/g;
/** `NAME=value` where the value is a stand-in (`inv_live_...`, `postgres://USER:PASSWORD@DB_HOST/...`) that the run fills in. */
const FILL_IN = /^(export\s+)?([A-Z_]+)=(\S*(?:\.\.\.|PASSWORD)\S*)(\s+#.*)?$/;

/**
 * The examples of one document, run in order as a reader would: in a fresh checkout-like folder
 * (its own ./data/ store, `bin/` and `package.json` of this repository), in one shell, with the
 * servers they start in the background. Ports are the run's own: each port a document names
 * (8080, 8081, ...) stands for a free loopback port, in commands and shown output alike.
 */
export class ExampleRun {
  readonly #t: TestContext;
  readonly #dir: string;
  readonly #ports = new Map<number, number>();
  readonly #servers: { pid: number; log: string }[] = [];
  #shell: ShellSession | undefined;
  /** Commands run so far. */
  commands = 0;

  constructor(t: TestContext) {
    this.#t = t;
    this.#dir = mkdtempSync(join(tmpdir(), 'docs-examples-'));
    symlinkSync(join(ROOT, 'bin'), join(this.#dir, 'bin'));
    symlinkSync(join(ROOT, 'package.json'), join(this.#dir, 'package.json'));
    t.after(() => this.#close());
  }

  /** Runs a shell block's commands in order; throws at the first whose output is not what the document shows. */
  async runBlock(block: CodeBlock): Promise<void> {
    const shell = await this.#session();
    for (const step of steps(block)) {
      const where = `${block.file}:${step.line}`;
      // The tree is installed already: the test runs in it.
      const written = step.command.replace(/^npm ci && /, '');
      for (const m of written.matchAll(NAMED_PORT)) await this.#port(Number(m[1] ?? m[2] ?? m[3]));
      const command = this.#withPorts(written);
      this.commands++;
      if (SERVER_COMMAND.test(command)) {
        await this.#startServer(shell, command, where);
        continue;
      }
      const fillIn = FILL_IN.exec(command);
      if (fillIn) {
        const value = await this.#fillIn(fillIn[2]!, fillIn[3]!, where);
        await this.#expectSuccess(shell, `${fillIn[1] ?? ''}${fillIn[2]}=${shellQuote(value)}`, where);
        continue;
      }
      const expected = step.expected.map((line) => this.#withPorts(line));
      if (/^curl\s/.test(command)) await this.#curl(shell, command, expected, where);
      else await this.#command(shell, command, expected, where);
    }
  }

  async #session(): Promise<ShellSession> {
    if (this.#shell) return this.#shell;
    const port = await this.#port(8080);
    // Only what a reader's terminal has: no setting of the service comes from the test's own environment.
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? this.#dir,
      LANG: 'C.UTF-8',
      // The service's default port is 8080, which here stands for the run's own; loopback only, and no drain on stop.
      PORT: String(port),
      HOST: '127.0.0.1',
      SHUTDOWN_DRAIN_MS: '0',
      DOCS_HEADERS: join(this.#dir, '.headers'),
    };
    this.#shell = new ShellSession(this.#dir, env);
    // curl as the reader runs it, its answer's headers also kept, so the status is known without -i.
    await this.#shell.run('curl() { command curl --dump-header "$DOCS_HEADERS" "$@"; }');
    return this.#shell;
  }

  /** The run's loopback port for a port the document names. */
  async #port(named: number): Promise<number> {
    let port = this.#ports.get(named);
    if (port === undefined) {
      port = await freePort();
      this.#ports.set(named, port);
    }
    return port;
  }

  /** The text with each port the document names (localhost:8080, PORT=8081, --port 8082) replaced by the run's. */
  #withPorts(text: string): string {
    return text
      .replace(/localhost:(\d{2,5})/g, (_, n: string) => `127.0.0.1:${this.#ports.get(Number(n)) ?? n}`)
      .replace(/\b([A-Z_]*PORT)=(\d{2,5})\b/g, (_, name: string, n: string) => `${name}=${this.#ports.get(Number(n)) ?? n}`)
      .replace(/--port([ =])(\d{2,5})\b/g, (_, sep: string, n: string) => `--port${sep}${this.#ports.get(Number(n)) ?? n}`);
  }

  async #startServer(shell: ShellSession, written: string, where: string): Promise<void> {
    const command = written.replace(/\s+#\s.*$/, '').replace(/\s*&$/, '');
    const log = join(this.#dir, `.server-${this.#servers.length}.log`);
    // Job control gives the server a process group of its own, so npm and every worker stop with it.
    const started = await shell.run(`set -m; ${command} > ${shellQuote(log)} 2>&1 < /dev/null & echo $!; set +m`);
    const pid = Number(started.stdout.trim());
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`${where}: could not start "${command}": ${started.stderr}`);
    this.#servers.push({ pid, log });
    // The port it was told, by PORT= or --port, else the shell's PORT: ready once /healthz answers there.
    const told = [...command.matchAll(/(?<![A-Z_])PORT=(\d+)|--port[ =](\d+)/g)].at(-1);
    const port = told ? Number(told[1] ?? told[2]) : await this.#port(8080);
    const until = Date.now() + 60_000;
    while (!(await answersHealth(port))) {
      if (!isAlive(pid) || Date.now() > until) throw new Error(`${where}: "${command}" did not start listening:\n${readText(log)}`);
      await sleep(50);
    }
  }

  async #fillIn(name: string, shown: string, where: string): Promise<string> {
    if (name === 'KEY') {
      // With workers the primary prints the banner when the first one listens: it may come a moment after /healthz answers.
      const until = Date.now() + 5000;
      for (;;) {
        const key = this.#servers.map(({ log }) => /^ {4}(inv_(?:live|test)_\S+)$/m.exec(readText(log))?.[1]).find(Boolean);
        if (key) return key;
        if (Date.now() > until) throw new Error(`${where}: KEY is the key a server prints at first start, and no server has printed one`);
        await sleep(50);
      }
    }
    if (name === 'KEY_ID') {
      // The key created last: the one the document has just shown being made.
      const listed = await (await this.#session()).run('./bin/petstore-inventory keys list --json');
      const keys = JSON.parse(listed.stdout) as { id: string; createdAt: string }[];
      const newest = keys.sort((a, b) => a.createdAt.localeCompare(b.createdAt)).at(-1);
      if (!newest) throw new Error(`${where}: KEY_ID is the id of the key made last, and the store has none`);
      return newest.id;
    }
    if (name === 'DATABASE_URL' && shown.replace(/^'/, '').startsWith('postgres://')) return (await createTestDatabase('postgres', this.#t)).databaseUrl;
    throw new Error(`${where}: no value to fill in for ${name}=${shown}`);
  }

  async #expectSuccess(shell: ShellSession, command: string, where: string): Promise<void> {
    const result = await shell.run(command);
    if (result.exitCode !== 0) throw new Error(`${where}: exit code ${result.exitCode}\n${result.stdout}${result.stderr}`);
  }

  async #curl(shell: ShellSession, command: string, expected: string[], where: string): Promise<void> {
    const result = await shell.run(`rm -f "$DOCS_HEADERS"; ${command}`);
    if (result.exitCode !== 0) throw new Error(`${where}: curl exited ${result.exitCode}: ${result.stderr}`);
    const answer = httpAnswer(readText(join(this.#dir, '.headers')), result.stdout);
    const difference = httpDifference(expected, answer);
    if (difference) throw new Error(`${where}: the answer is not what the document shows:\n${difference}\n(command: ${command})`);
  }

  async #command(shell: ShellSession, command: string, expected: string[], where: string): Promise<void> {
    // Both streams in the order they were written, as a terminal shows them.
    const result = await shell.run(`{ ${command}\n} 2>&1`);
    // An import's progress lines come every 5 s off a terminal: whether one comes depends on the machine's speed, and a terminal shows none.
    const printed = `${result.stdout}${result.stderr}`
      .split('\n')
      .filter((line) => !/^import: .* rows\/s\)/.test(line))
      .join('\n')
      .replace(/\n+$/, '');
    if (result.exitCode !== 0) throw new Error(`${where}: exit code ${result.exitCode}\n${printed}\n(command: ${command})`);
    if (expected.length > 0 && !matchesShown(expected.join('\n'), printed)) {
      throw new Error(`${where}: the output is not what the document shows:\n${printed}\nshown:\n${expected.join('\n')}\n(command: ${command})`);
    }
  }

  async #close(): Promise<void> {
    for (const { pid } of this.#servers) signalGroup(pid, 'SIGTERM');
    for (const { pid } of this.#servers) {
      const until = Date.now() + 20_000;
      while (isAlive(pid) && Date.now() < until) await sleep(50);
      if (isAlive(pid)) signalGroup(pid, 'SIGKILL');
    }
    await this.#shell?.close();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}


async function answersHealth(port: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200;
  } catch {
    return false;
  }
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}


function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
