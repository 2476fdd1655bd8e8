import { jetstream, jetstreamManager, JetStreamApiError, RetentionPolicy, StorageType, type JetStreamClient } from '@nats-io/jetstream';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { SUBJECT_PREFIX } from './subjects.js';

/**
 * The stream's duplicate window: a message whose Nats-Msg-Id was stored within it is dropped. It
 * must outlast a takeover (a relay's lease runs out within RELAY_LEASE_MS, plus a round), since the
 * successor publishes again what its predecessor published but did not record.
 */
export const DUPLICATE_WINDOW_MS = 2 * 60_000;
/** How long a publish waits for the stream's ack before it counts as failed (and is sent again, same id). */
const ACK_TIMEOUT_MS = 5000;

export interface NatsStreamOptions {
  /** EVENTS_NATS_URL: one URL, or several comma-separated. */
  url: string;
  stream: string;
  /** How long the stream keeps a message (EVENTS_NATS_MAX_AGE_DAYS); 0 keeps everything. */
  maxAgeMs: number;
  /** Told when the connection to NATS is lost, and when it is back. */
  onStatus?: (status: 'disconnected' | 'reconnected') => void;
}

/** A connection to NATS with the events' stream set up: publish one message, acked by the stream. */
export interface NatsStream {
  /** Publishes `body` on `subject` with Nats-Msg-Id `msgId`; resolves once the stream stored it (or dropped it as a duplicate). */
  publish(subject: string, body: string, msgId: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Connects (rejects when the server cannot be reached: the caller tries again), then creates the
 * stream, or sets its retention and duplicate window when it exists. Once connected, the client
 * reconnects by itself however long NATS is away; publishes in between fail and are sent again.
 */
export async function openNatsStream(options: NatsStreamOptions): Promise<NatsStream> {
  const nc = await connect({
    servers: options.url.split(',').map((s) => s.trim()),
    name: 'petstore-inventory',
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
  });
  try {
    await ensureStream(nc, options);
  } catch (err) {
    await nc.close().catch(() => {});
    throw err;
  }
  void watchStatus(nc, options.onStatus);
  const js: JetStreamClient = jetstream(nc, { timeout: ACK_TIMEOUT_MS });
  return {
    async publish(subject, body, msgId) {
      await js.publish(subject, body, { msgID: msgId, timeout: ACK_TIMEOUT_MS });
    },
    async close() {
      await nc.close();
    },
  };
}

/** The server's answer to creating a stream that exists with other settings (JSStreamNameExistErr). */
const STREAM_NAME_IN_USE = 10058;

async function ensureStream(nc: NatsConnection, options: NatsStreamOptions): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const settings = { max_age: nanos(options.maxAgeMs), duplicate_window: nanos(DUPLICATE_WINDOW_MS) };
  try {
    // Creating a stream that exists with the same settings succeeds.
    await jsm.streams.add({ name: options.stream, subjects: [`${SUBJECT_PREFIX}.>`], retention: RetentionPolicy.Limits, storage: StorageType.File, ...settings });
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE)) throw err;
    // It exists with other settings (another retention, or an operator's changes): the settings of this instance's start apply.
    await jsm.streams.update(options.stream, settings);
  }
}

async function watchStatus(nc: NatsConnection, onStatus: NatsStreamOptions['onStatus']): Promise<void> {
  if (!onStatus) return;
  for await (const status of nc.status()) {
    if (status.type === 'disconnect') onStatus('disconnected');
    else if (status.type === 'reconnect') onStatus('reconnected');
  }
}
