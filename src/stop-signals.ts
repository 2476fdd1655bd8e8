/**
 * The same stop signal again within this long is the same request delivered twice (decisions 7.5):
 * Ctrl-C on `npm start` reaches the server from the terminal (which signals the whole foreground
 * process group) and again from npm (which forwards its own copy) a few milliseconds apart.
 */
export const REPEATED_SIGNAL_MS = 1000;

/** What a stop signal asks for: the first stops gracefully, a copy of it is no new request, a later one means "exit now". */
export type StopRequest = 'stop' | 'copy' | 'stop-now';

/** Tells each SIGTERM/SIGINT what it asks for, from the signals before it; `now` is a monotonic clock in ms. */
export function stopRequests(now: () => number = () => performance.now()): (signal: NodeJS.Signals) => StopRequest {
  let first: { signal: NodeJS.Signals; at: number } | undefined;
  return (signal) => {
    if (first === undefined) {
      first = { signal, at: now() };
      return 'stop';
    }
    return signal === first.signal && now() - first.at < REPEATED_SIGNAL_MS ? 'copy' : 'stop-now';
  };
}

/** Calls `onSignal` with what each SIGTERM and SIGINT the process receives asks for. */
export function onStopSignals(onSignal: (request: StopRequest, signal: NodeJS.Signals) => void): void {
  const requestOf = stopRequests();
  const handle = (signal: NodeJS.Signals) => onSignal(requestOf(signal), signal);
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
}
