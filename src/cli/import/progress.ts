import type { CliIO } from '../io.js';

/** A terminal's progress line is redrawn at most this often (10 times a second). */
export const TERMINAL_REDRAW_MS = 100;
/** Anywhere else (a log, a pipe), one line this often. */
export const LINE_EVERY_MS = 5000;

/** How far an import is: bytes of the file read, entries read, and the phase once reading is done. */
export interface ImportSample {
  bytes: number;
  totalBytes: number;
  rows: number;
  seconds: number;
  phase: 'reading' | 'checking' | 'applying';
}

export interface Progress {
  /** The import moved on to checking or applying: shown at once. */
  phase(phase: ImportSample['phase']): void;
  /** Takes the display away (the terminal's line is cleared). */
  stop(): void;
}

/**
 * The progress of an import on stderr: on a terminal a bar with rows/s and the time left (from the
 * bytes read), redrawn in place; elsewhere a plain line every LINE_EVERY_MS, and at each phase once
 * there has been one (an import done within LINE_EVERY_MS prints none).
 */
export function importProgress(io: CliIO, sample: (phase: ImportSample['phase']) => ImportSample): Progress {
  const terminal = io.stderrTerminal;
  let phase: ImportSample['phase'] = 'reading';
  let drawn = false;
  const draw = () => {
    drawn = true;
    const now = sample(phase);
    if (terminal) io.stderr(`\r${progressBar(now, terminal.columns)}\x1b[K`);
    else io.stderr(`${progressLine(now)}\n`);
  };
  const timer = setInterval(draw, terminal ? TERMINAL_REDRAW_MS : LINE_EVERY_MS);
  // The display never keeps the process alive.
  timer.unref();
  return {
    phase(next) {
      phase = next;
      if (terminal || drawn) draw();
    },
    stop() {
      clearInterval(timer);
      if (terminal) io.stderr('\r\x1b[K');
    },
  };
}

/** "[#######.......]  47%  470,001 rows  213,637 rows/s  3 s left", cut to the terminal's width. */
export function progressBar(s: ImportSample, columns: number): string {
  const share = s.totalBytes > 0 ? Math.min(1, s.bytes / s.totalBytes) : 1;
  const rate = `${count(s.rows)} rows  ${count(s.seconds > 0 ? s.rows / s.seconds : 0)} rows/s`;
  const tail = s.phase === 'reading' ? `${rate}  ${timeLeft(s)}` : `${rate}  ${s.phase}…`;
  const text = ` ${String(Math.floor(share * 100)).padStart(3)}%  ${tail}`;
  const width = Math.max(10, Math.min(40, columns - text.length - 3));
  const done = Math.round(share * width);
  return `[${'#'.repeat(done)}${'.'.repeat(width - done)}]${text}`.slice(0, Math.max(1, columns - 1));
}

/** "import: 47% of 18.4 MB read, 470,001 rows (213,637 rows/s), 3 s left". */
export function progressLine(s: ImportSample): string {
  const rate = `${count(s.rows)} rows (${count(s.seconds > 0 ? s.rows / s.seconds : 0)} rows/s)`;
  if (s.phase !== 'reading') return `import: read ${rate}; ${s.phase} them`;
  const share = s.totalBytes > 0 ? Math.min(1, s.bytes / s.totalBytes) : 1;
  return `import: ${Math.floor(share * 100)}% of ${(s.totalBytes / 1e6).toFixed(1)} MB read, ${rate}, ${timeLeft(s)}`;
}

function timeLeft(s: ImportSample): string {
  if (s.bytes === 0 || s.seconds === 0) return 'time left unknown';
  const seconds = ((s.totalBytes - s.bytes) * s.seconds) / s.bytes;
  return seconds < 60 ? `${Math.ceil(seconds)} s left` : `${Math.ceil(seconds / 60)} min left`;
}

function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
