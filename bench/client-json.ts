/**
 * How fast the typed client parses a list answer, each way it can: lossless-json (Node 20) and
 * JSON.parse with the numbers' source text (Node 22 and later), with plain JSON.parse (which rounds
 * big petIds: the floor, not an option) for scale.
 *
 *   node --import tsx bench/client-json.ts [ENTRIES]     (default 100000)
 *
 * Prints the median of several runs of each; asserts nothing.
 */
import { performance } from 'node:perf_hooks';
import { NATIVE_JSON_SOURCE, parseJsonNative } from '../clients/typescript/src/json-native.js';
import { parseJsonLossless } from '../clients/typescript/src/json.js';

const ENTRIES = Number(process.argv[2] ?? 100_000);
const RUNS = 11;
const STATUSES = ['available', 'pending', 'sold'];

/** A list as GET /v1/inventory answers it: petIds ascending across the int64 range, a fifth of them beyond 2^53. */
function listText(entries: number): string {
  const parts: string[] = [];
  const step = (2n ** 64n - 1n) / BigInt(entries);
  for (let i = 0; i < entries; i++) {
    const petId = i % 5 === 0 ? -(2n ** 63n) + BigInt(i) * step : BigInt(i);
    parts.push(`{"petId":${petId},"quantity":${(i * 7919) % 5000},"status":"${STATUSES[i % 3]}"}`);
  }
  return `[${parts.join(',')}]`;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function measure(name: string, parse: (text: string) => unknown, text: string): void {
  parse(text); // warm up
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const start = performance.now();
    parse(text);
    times.push(performance.now() - start);
  }
  const ms = median(times);
  const mbPerSecond = Buffer.byteLength(text) / 1e6 / (ms / 1000);
  process.stdout.write(`${name.padEnd(40)} ${ms.toFixed(1).padStart(8)} ms  ${mbPerSecond.toFixed(1).padStart(6)} MB/s\n`);
}

const text = listText(ENTRIES);
process.stdout.write(`Node ${process.versions.node}: ${ENTRIES.toLocaleString('en')} entries, ${(Buffer.byteLength(text) / 1e6).toFixed(1)} MB, median of ${RUNS} runs\n`);
measure('lossless-json (parseJsonLossless)', parseJsonLossless, text);
if (NATIVE_JSON_SOURCE) measure('JSON.parse + source (parseJsonNative)', parseJsonNative, text);
else process.stdout.write('JSON.parse + source (parseJsonNative)    not on this Node: its JSON.parse gives revivers no source text\n');
measure('JSON.parse, no reviver (rounds petIds)', (t) => JSON.parse(t) as unknown, text);
