import { randomUUID } from 'node:crypto';
import type { ChangeOrigin, ChangeResult } from '../domain/inventory.js';
import { stringifyJson } from '../json.js';
import type { ChangeReason } from '../schemas/inventory.js';
import { CHANGE_REASONS, QUANTITY_MAX } from '../schemas/values.js';
import { parseCommandArgs, petIdArgument, printHelp, type Command } from './command.js';
import { invalidValueMessage, quoteForMessage } from './import/fields.js';
import { CliError, EXIT_USAGE } from './io.js';
import { withExistingStore } from './store-access.js';

const DELTA_RULE = `a non-zero integer from -${QUANTITY_MAX} to ${QUANTITY_MAX}`;

const ADJUST_HELP = `Usage: petstore-inventory pets adjust ID --delta N [--reason REASON]

Moves the count of one pet by N, from whatever the store holds when the change commits, as
POST /v1/inventory/{petId}/adjustments does: --delta -1 for one sold, --delta 5 for five
received. A change that would take the count below 0 is refused, naming the count on hand, and
nothing changes. The change is written to the pet's history with key id cli:adjust and key name
adjust (no API key has them). Prints the entry after the change as JSON.

Options:
  --delta N        required: ${DELTA_RULE}
  --reason REASON  why the count changed: ${CHANGE_REASONS.join(', ')}
  -h, --help       show this help
`;

export const adjustCommand: Command = {
  summary: "move one pet's count by a number, up or down",
  async run(args, io) {
    const { values, positionals } = parseCommandArgs({
      args,
      options: { delta: { type: 'string' }, reason: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    });
    if (values.help) return printHelp(io, ADJUST_HELP);
    const petId = petIdArgument('pets adjust', positionals);
    if (values.delta === undefined) throw new CliError('pets adjust needs --delta N (see "petstore-inventory pets adjust --help")', EXIT_USAGE);
    const delta = parseDeltaText(values.delta);
    if (delta === undefined) throw new CliError(invalidValueMessage('--delta', DELTA_RULE, quoteForMessage(values.delta)), EXIT_USAGE);
    const reason = values.reason === undefined ? null : parseReasonText(values.reason);
    if (reason === undefined) throw new CliError(invalidValueMessage('--reason', `one of ${CHANGE_REASONS.join(', ')}`, quoteForMessage(values.reason!)), EXIT_USAGE);

    const result = await withExistingStore(io, ['changes'], ({ changes }) => changes.applyChange({ petId, delta, reason, ...adjustOrigin(new Date()) }));
    const entry = appliedEntry(result, petId, delta);
    io.stdout(`${stringifyJson(entry.item)}\n`);
    io.stderr(`Pet ${petId}: ${entry.item.quantity - delta} -> ${entry.item.quantity} (${values.delta}${reason ? `, ${reason}` : ''}).\n`);
    return 0;
  },
};

/**
 * Who a CLI adjustment is: the CLI's change, whose event has source cli and no key nor request id;
 * in the history a key id no API key can have (theirs are `key_` and hex), as `cli:import` for a
 * stocktake, and a request id of its own (decisions 5.11).
 */
export function adjustOrigin(at: Date): ChangeOrigin {
  return { source: 'cli', keyId: 'cli:adjust', keyName: 'adjust', requestId: `adjust-${randomUUID()}`, at };
}

/** The entry the adjustment left, or the refusal as the one line the CLI prints (exit 1). */
function appliedEntry(result: ChangeResult, petId: bigint, delta: number) {
  switch (result.kind) {
    case 'updated':
      return result.entry;
    case 'not_found':
      throw new CliError(`pet ${petId} has no inventory entry`);
    case 'insufficient_stock':
      throw new CliError(`pet ${petId} has ${result.entry.item.quantity} in stock: --delta ${delta} would take it below 0; nothing was changed`);
    case 'quantity_out_of_range':
      throw new CliError(`pet ${petId} has ${result.entry.item.quantity} in stock: --delta ${delta} would take it above ${QUANTITY_MAX}; nothing was changed`);
    default:
      // No If-Match nor Idempotency-Key is sent, so no other outcome can come back.
      throw new Error(`unexpected outcome of an adjustment: ${result.kind}`);
  }
}

/** A signed canonical decimal, not zero, within ±QUANTITY_MAX (decisions 5.11). */
export function parseDeltaText(text: string): number | undefined {
  if (!/^[+-]?[1-9][0-9]{0,9}$/.test(text)) return undefined;
  const value = Number(text);
  return Math.abs(value) <= QUANTITY_MAX ? value : undefined;
}

function parseReasonText(text: string): ChangeReason | undefined {
  return (CHANGE_REASONS as readonly string[]).includes(text) ? (text as ChangeReason) : undefined;
}
