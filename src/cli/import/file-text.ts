import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { CliError } from '../io.js';

/** Bytes read from the file at a time: the most of it held at once. */
const PIECE_BYTES = 1024 * 1024;

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EISDIR: 'it is a directory',
  EACCES: 'permission denied',
};

/** A file read as UTF-8 text, a piece at a time; `bytesRead` grows as the pieces are taken. */
export interface FileText {
  size: number;
  bytesRead: number;
  pieces: AsyncIterable<string>;
}

/**
 * Opens `file` to be read as UTF-8 text, piece by piece, never whole. A byte-order mark is dropped;
 * bytes that are not UTF-8 stop the reading with a CliError, as does a file that cannot be read.
 */
export async function openFileText(file: string): Promise<FileText> {
  let size: number;
  try {
    const info = await stat(file);
    if (info.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
    size = info.size;
  } catch (err) {
    throw readFailure(file, err);
  }
  const text: FileText = { size, bytesRead: 0, pieces: pieces() };
  async function* pieces(): AsyncGenerator<string> {
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const decode = (bytes?: Uint8Array) => {
      try {
        return bytes === undefined ? decoder.decode() : decoder.decode(bytes, { stream: true });
      } catch {
        throw new CliError(`${file} is not UTF-8 text (at about byte ${text.bytesRead})`);
      }
    };
    try {
      for await (const bytes of createReadStream(file, { highWaterMark: PIECE_BYTES }) as AsyncIterable<Buffer>) {
        text.bytesRead += bytes.length;
        yield decode(bytes);
      }
    } catch (err) {
      throw err instanceof CliError ? err : readFailure(file, err);
    }
    yield decode();
  }
  return text;
}

function readFailure(file: string, err: unknown): CliError {
  return new CliError(`cannot read ${file}: ${READ_ERRORS[(err as { code?: string }).code ?? ''] ?? (err as Error).message}`);
}
