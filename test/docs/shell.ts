import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/** What one command printed and how it ended. */
export interface CommandResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/**
 * One bash process that runs commands one after another, as a reader types them into one terminal:
 * a variable set by one command is there for the next. Each command's output is told apart by a
 * marker printed after it on both streams.
 */
export class ShellSession {
  readonly #bash: ChildProcessWithoutNullStreams;
  readonly #marker = `__docs_example_${randomBytes(8).toString('hex')}__`;
  #stdout = '';
  #stderr = '';
  #waiting: (() => void) | undefined;
  readonly #exited: Promise<void>;

  constructor(cwd: string, env: Record<string, string>) {
    this.#bash = spawn('bash', ['--noprofile', '--norc'], { cwd, env });
    this.#bash.stdout.on('data', (c: Buffer) => this.#received('out', c));
    this.#bash.stderr.on('data', (c: Buffer) => this.#received('err', c));
    this.#exited = new Promise((done) => this.#bash.on('exit', () => done()));
  }

  /** Runs one command (several lines if they continue with a backslash) and returns what it printed. */
  async run(command: string, timeoutMs = 60_000): Promise<CommandResult> {
    this.#stdout = '';
    this.#stderr = '';
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no end of "${command}" within ${timeoutMs} ms:\n${this.#stdout}\n${this.#stderr}`)), timeoutMs);
      this.#waiting = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    // The newline before each marker ends output that has none; it is taken off again below.
    this.#bash.stdin.write(`${command}\n__rc=$?; printf '\\n${this.#marker} %d\\n' "$__rc"; printf '\\n${this.#marker}\\n' >&2\n`);
    await done;
    const out = new RegExp(`\\n${this.#marker} (\\d+)\\n$`).exec(this.#stdout)!;
    return {
      stdout: this.#stdout.slice(0, out.index),
      stderr: this.#stderr.slice(0, -`\n${this.#marker}\n`.length),
      exitCode: Number(out[1]),
    };
  }

  /** Ends the shell, at once if a command is still running (what it started in the background is the caller's to end). */
  async close(): Promise<void> {
    this.#bash.stdin.end();
    const timer = setTimeout(() => this.#bash.kill('SIGKILL'), 5000);
    await this.#exited;
    clearTimeout(timer);
  }

  #received(stream: 'out' | 'err', chunk: Buffer): void {
    if (stream === 'out') this.#stdout += chunk.toString();
    else this.#stderr += chunk.toString();
    if (this.#stdout.endsWith('\n') && new RegExp(`\\n${this.#marker} \\d+\\n$`).test(this.#stdout) && this.#stderr.endsWith(`\n${this.#marker}\n`)) {
      this.#waiting?.();
      this.#waiting = undefined;
    }
  }
}
