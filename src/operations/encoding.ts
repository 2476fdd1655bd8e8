import { CONTENT_ENCODINGS, type ContentEncoding } from '../cache/encoded-body.js';

/** Below this many bytes a compressed body saves less than it costs. */
export const COMPRESS_MIN_BYTES = 1024;

/**
 * The coding to answer with (RFC 9110 12.5.3): the best of br and gzip that Accept-Encoding
 * allows with q > 0, or undefined for identity (also for small bodies).
 */
export function negotiateEncoding(header: string | undefined, size: number): ContentEncoding | undefined {
  if (!header || size < COMPRESS_MIN_BYTES) return undefined;
  const weights = new Map<string, number>();
  for (const part of header.toLowerCase().split(',')) {
    const [coding, ...params] = part.split(';').map((s) => s.trim());
    if (!coding) continue;
    const q = params.map((p) => /^q=([01](\.\d{0,3})?)$/.exec(p)?.[1]).find((v) => v !== undefined);
    weights.set(coding, q === undefined ? 1 : Number(q));
  }
  let best: ContentEncoding | undefined;
  let bestWeight = 0;
  for (const coding of CONTENT_ENCODINGS) {
    const weight = weights.get(coding) ?? weights.get('*') ?? 0;
    if (weight > bestWeight) {
      best = coding;
      bestWeight = weight;
    }
  }
  return best;
}
