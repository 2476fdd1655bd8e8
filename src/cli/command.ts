import { CliError, EXIT_USAGE, PROGRAM, type CliIO } from './io.js';

export interface Command {
  /** One line for the help of the group that holds it. */
  summary: string;
  /** Runs with the arguments after the command's name; resolves to the exit code. */
  run(args: string[], io: CliIO): Promise<number>;
}

/**
 * A command made of named subcommands (`keys create`, `pets list`, the CLI itself): it picks
 * one by its first argument and answers --help with the list of them. `name` is the group's
 * name after the program's (none for the CLI itself); `options` are extra lines for its help.
 */
export function commandGroup(spec: { name?: string; summary: string; description: string; options?: string; commands: Record<string, Command> }): Command {
  const names = Object.keys(spec.commands);
  const usage = spec.name === undefined ? PROGRAM : `${PROGRAM} ${spec.name}`;
  const help =
    `Usage: ${usage} <command> [options]\n\n${spec.description}\n\nCommands:\n` +
    Object.entries(spec.commands)
      .map(([name, c]) => `  ${name.padEnd(8)}${c.summary}`)
      .join('\n') +
    (spec.options === undefined ? '' : `\n\nOptions:\n${spec.options}`) +
    `\n\nRun "${usage} <command> --help" for its options.\n`;
  return {
    summary: spec.summary,
    async run([name, ...rest], io) {
      if (name === '--help' || name === '-h' || name === 'help') {
        io.stdout(help);
        return 0;
      }
      // Object.hasOwn: "constructor" must be an unknown command, not Object's method.
      const command = name !== undefined && Object.hasOwn(spec.commands, name) ? spec.commands[name] : undefined;
      if (!command) {
        // The error line already starts with the program's name (main.ts), so the message names only the group.
        const quoted = JSON.stringify(name);
        const what =
          spec.name === undefined
            ? (name === undefined ? 'no command given' : `unknown command ${quoted}`)
            : (name === undefined ? `${spec.name} needs a command` : `${spec.name} has no command ${quoted}`);
        throw new CliError(`${what}: use ${names.join(', ')} (see "${usage} --help")`, EXIT_USAGE);
      }
      return command.run(rest, io);
    },
  };
}

/** Prints a command's help; --help always exits 0. */
export function printHelp(io: CliIO, text: string): number {
  io.stdout(text);
  return 0;
}
