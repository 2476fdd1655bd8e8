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

/** The failure of a command given an id no endpoint has (exit 1). */
export function noEndpoint(id: string): CliError {
  // Printed as given when it looks like an id; anything else quoted and cut, so it cannot garble the terminal.
  const shown = /^[\w-]{1,64}$/.test(id) ? id : JSON.stringify(id.slice(0, 64));
  return new CliError(`no webhook endpoint ${shown} (see "petstore-inventory webhooks list")`);
}
