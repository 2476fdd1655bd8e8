/**
 * What the bare senders (bare-sender.ts, bare-sender-undici.ts) are given and what they print.
 * Env: HOOK_URL (http://host:port/path), BARE_EVENT (the body, an event as the service delivers it),
 * COUNT (deliveries, at least 1), BARE_WARMUP (optional: how many of them go before the timing starts,
 * as the service's are measured once its code is warm; 0 by default), BARE_SECRET (optional: the
 * signing secret, else a new one).
 */
import { newWebhookSecret } from '../src/webhooks/secret.js';
import { requiredEnv } from './env.js';

/** What a bare sender prints when done, one line of JSON: the deliveries timed (those after the warm-up), their wall time, and its CPU (user + system, all threads) over them. */
export interface BareSenderReport {
  deliveries: number;
  seconds: number;
  cpuUs: number;
}

/** The receiver's URL, the body, how many deliveries and the secrets that sign them, read from the environment. */
export function bareSenderInput(): { url: URL; body: string; count: number; warmup: number; secrets: string[] } {
  const url = new URL(requiredEnv('HOOK_URL'));
  const body = requiredEnv('BARE_EVENT');
  const count = Number(requiredEnv('COUNT'));
  if (!Number.isInteger(count) || count < 1) throw new Error('COUNT must be a positive integer');
  const warmup = Number(process.env.BARE_WARMUP ?? 0);
  if (!Number.isInteger(warmup) || warmup < 0 || warmup >= count) throw new Error('BARE_WARMUP must be an integer from 0 to COUNT - 1');
  // A test passes its own secret to verify the signatures; the bench lets each run make one.
  return { url, body, count, warmup, secrets: [process.env.BARE_SECRET ?? newWebhookSecret()] };
}
