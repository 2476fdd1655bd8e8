import type { Command } from './command.js';

/**
 * A command whose module is imported only when it runs: `--help` and each command load only
 * their own code (the server's, TypeBox's schemas and the webhook sender stay on disk for
 * `keys list`). The summary is given here, since reading it from the module would load it;
 * test/cli/lazy-command.test.ts checks that both say the same.
 */
export function lazyCommand(summary: string, load: () => Promise<Command>): Command {
  return { summary, run: async (args, io) => (await load()).run(args, io) };
}
