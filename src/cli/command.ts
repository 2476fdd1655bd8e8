import { parseArgs, type ParseArgsConfig } from 'node:util';
import { tryParsePetId } from '../domain/pet-id.js';
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
  // Two spaces at least after the longest name (rotate-secret), eight columns for the short ones.
  const width = Math.max(8, ...names.map((name) => name.length + 2));
  const help =
    `Usage: ${usage} <command> [options]\n\n${spec.description}\n\nCommands:\n` +
    Object.entries(spec.commands)
      .map(([name, c]) => `  ${name.padEnd(width)}${c.summary}`)
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

/** Text that parseArgs would take for an option, but that is a negative number: "-5", "-9223372036854775808". */
const NEGATIVE_NUMBER = /^-\d/;

/**
 * node:util parseArgs, where a negative number is a value: after an option that takes one
 * (`--pet-id -5`, as `--pet-id=-5` already was) and as a positional (`pets history -5`).
 * parseArgs alone refuses both, as an ambiguous value and as an unknown option "-5"; no
 * command has a digit for a short option, so "-" and a digit is never an option.
 */
export function parseCommandArgs<T extends ParseArgsConfig & { args: readonly string[] }>(config: T): ReturnType<typeof parseArgs<T>> {
  const options = config.options ?? {};
  const args: string[] = [];
  // Index in `args` of each negative positional, which parseArgs sees as "" there.
  const negatives = new Map<number, string>();
  for (let i = 0; i < config.args.length; i++) {
    const arg = config.args[i]!;
    const next = config.args[i + 1];
    if (arg === '--') {
      args.push(...config.args.slice(i));
      break;
    }
    const option = takesValue(options, arg);
    if (option !== undefined && next !== undefined && NEGATIVE_NUMBER.test(next)) {
      args.push(`--${option}=${next}`);
      i++;
    } else if (config.allowPositionals && NEGATIVE_NUMBER.test(arg)) {
      negatives.set(args.length, arg);
      args.push('');
    } else {
      args.push(arg);
    }
  }
  const { values, tokens } = parseArgs({ ...config, args, tokens: true });
  const positionals = tokens!.flatMap((t) => (t.kind === 'positional' ? [negatives.get(t.index) ?? t.value] : []));
  return { values, positionals } as ReturnType<typeof parseArgs<T>>;
}

/** The long name of the option `arg` names alone (`--pet-id`, or its short form), when that option takes a value. */
function takesValue(options: NonNullable<ParseArgsConfig['options']>, arg: string): string | undefined {
  const long = arg.startsWith('--') && !arg.includes('=') ? arg.slice(2) : undefined;
  for (const [name, option] of Object.entries(options)) {
    if (option.type === 'string' && (name === long || (arg.length === 2 && arg === `-${option.short}`))) return name;
  }
  return undefined;
}

/** The one pet ID a command (`pets history ID`, `pets remove ID`) takes as its positional, or the usage error. */
export function petIdArgument(command: string, positionals: readonly string[]): bigint {
  const [id] = positionals;
  if (id === undefined || positionals.length > 1) throw new CliError(`${command} takes exactly one pet ID`, EXIT_USAGE);
  const petId = tryParsePetId(id);
  if (petId === undefined) throw new CliError(`pet ID must be an int64 without leading zeros or plus sign (got ${JSON.stringify(id)})`, EXIT_USAGE);
  return petId;
}
