import { checkWebhookUrl } from '../../webhooks/address-guard.js';
import { CliError, EXIT_USAGE, type CliIO } from '../io.js';

export const URL_MAX = 2048;

/**
 * A receiver's URL as a command that sets one stores it (parsed and normalised), checked as the
 * servers check it: refused (exit 2) when a server would refuse to deliver to it, unless the CLI
 * too runs with WEBHOOKS_ALLOW_PRIVATE=true; then it is accepted with a warning on stderr, since
 * the servers deliver to it only if they run with the setting as well (decisions 10.12). The URL
 * is never echoed: it may hold credentials.
 */
export async function receiverUrl(raw: string, allowPrivate: boolean, io: Pick<CliIO, 'stderr'>): Promise<string> {
  if (raw.length > URL_MAX) throw new CliError(`--url must be at most ${URL_MAX} characters`, EXIT_USAGE);
  const serverWouldRefuse = await checkWebhookUrl(raw, false);
  if (serverWouldRefuse !== undefined && allowPrivate) {
    // What WEBHOOKS_ALLOW_PRIVATE=true does not allow either (a scheme, credentials, a host that does not resolve).
    const why = await checkWebhookUrl(raw, true);
    if (why !== undefined) throw refused(why);
    io.stderr(privateReceiverWarning(serverWouldRefuse));
  } else if (serverWouldRefuse !== undefined) {
    throw refused(serverWouldRefuse);
  }
  return new URL(raw).href;
}

function refused(why: string): CliError {
  return new CliError(`--url is refused: ${why.replace(/^refused: /, '')}`, EXIT_USAGE);
}

/** The warning for a URL only WEBHOOKS_ALLOW_PRIVATE=true lets the servers deliver to. */
export function privateReceiverWarning(why: string): string {
  return (
    `warning: a server without WEBHOOKS_ALLOW_PRIVATE=true refuses this URL: ${why.replace(/^refused: /, '')}.\n` +
    'Every server that delivers webhooks needs WEBHOOKS_ALLOW_PRIVATE=true too; without it each delivery fails and is retried until the endpoint is disabled.\n'
  );
}
