import { commandGroup, type Command } from './command.js';
import { tailCommand } from './tail.js';

/** The change events of the store: every committed change of an entry's quantity or status. */
export const eventsCommand: Command = commandGroup({
  name: 'events',
  summary: 'follow the change events of the store',
  description: 'Follows the ordered log of every committed change of an entry (the API\'s GET /v1/events and its stream).',
  commands: { tail: tailCommand },
});
