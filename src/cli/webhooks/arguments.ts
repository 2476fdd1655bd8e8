import { MAX_IN_FLIGHT_MAX, MAX_IN_FLIGHT_MIN } from '../../domain/webhook.js';
import { CliError, EXIT_USAGE } from '../io.js';

/** The --help option every webhooks command takes. */
export const HELP_OPTION = { type: 'boolean', short: 'h' } as const;

/** The one endpoint id a command (`webhooks remove ID`, ...) takes as its positional, or the usage error. */
export function endpointIdArgument(command: string, positionals: readonly string[]): string {
  const [id] = positionals;
  if (id === undefined || positionals.length > 1) {
    throw new CliError(`webhooks ${command} takes exactly one endpoint id (see "petstore-inventory webhooks list")`, EXIT_USAGE);
  }
  // A secret pasted by mistake must not be echoed back: secrets never appear in messages.
  if (id.startsWith('whsec_')) throw new CliError('that is a signing secret, not an endpoint id: pass the whk_... id that "petstore-inventory webhooks list" shows', EXIT_USAGE);
  return id;
}

/** The value of --max-in-flight, or the usage error naming the bounds. */
export function maxInFlightOption(raw: string): number {
  const n = /^\d{1,3}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= MAX_IN_FLIGHT_MIN && n <= MAX_IN_FLIGHT_MAX)) {
    // Cut and quoted: whatever was typed cannot garble the terminal.
    throw new CliError(`--max-in-flight must be a whole number from ${MAX_IN_FLIGHT_MIN} to ${MAX_IN_FLIGHT_MAX} (got ${JSON.stringify(raw.slice(0, 20))})`, EXIT_USAGE);
  }
  return n;
}

/** The failure of a command given an id no endpoint has (exit 1). */
export function noEndpoint(id: string): CliError {
  // Printed as given when it looks like an id; anything else quoted and cut, so it cannot garble the terminal.
  const shown = /^[\w-]{1,64}$/.test(id) ? id : JSON.stringify(id.slice(0, 64));
  return new CliError(`no webhook endpoint ${shown} (see "petstore-inventory webhooks list")`);
}
