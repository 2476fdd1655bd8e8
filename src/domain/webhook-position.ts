/**
 * An endpoint's place beyond its deliveredSeq, as one text column each keeps it: the seqs
 * delivered above it, as ascending ranges ("12-15,18"), and the events waiting for a retry
 * ("seq:failures:ms since the epoch", comma-separated). Compact, and read by both backends alike.
 */
import type { RetryingEvent } from './webhook.js';

/** Ascending seqs as ranges: "3-5,9". */
export function encodeSeqs(seqs: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < seqs.length; ) {
    let j = i;
    while (j + 1 < seqs.length && seqs[j + 1] === seqs[j]! + 1) j++;
    parts.push(j === i ? String(seqs[i]) : `${seqs[i]}-${seqs[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

export function decodeSeqs(text: string): number[] {
  const seqs: number[] = [];
  for (const part of text.split(',')) {
    if (part === '') continue;
    const [from, to = from] = part.split('-').map(Number) as [number, number?];
    for (let seq = from; seq <= to; seq++) seqs.push(seq);
  }
  return seqs;
}

export function encodeRetrying(retrying: readonly RetryingEvent[]): string {
  return retrying.map((r) => `${r.seq}:${r.failures}:${r.at.getTime()}`).join(',');
}

export function decodeRetrying(text: string): RetryingEvent[] {
  if (text === '') return [];
  return text.split(',').map((part) => {
    const [seq, failures, at] = part.split(':').map(Number) as [number, number, number];
    return { seq, failures, at: new Date(at) };
  });
}
