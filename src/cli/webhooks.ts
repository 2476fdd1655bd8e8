import { commandGroup, type Command } from './command.js';
import { addCommand } from './webhooks/add.js';
import { deliveriesCommand, listCommand } from './webhooks/list.js';
import { disableCommand, enableCommand, removeCommand, replayCommand, rotateSecretCommand } from './webhooks/state.js';
import { testCommand } from './webhooks/test-delivery.js';

/** The webhooks command group: endpoints and their delivery log, managed by the operator. */
export const webhooksCommand: Command = commandGroup({
  name: 'webhooks',
  summary: 'add, list, test and manage webhook endpoints',
  description:
    'Manages the webhook endpoints every change event is POSTed to, in order and signed (Standard Webhooks).\n' +
    'Reads WEBHOOKS_ALLOW_PRIVATE and WEBHOOK_TIMEOUT_MS as the server does.',
  commands: {
    add: addCommand,
    list: listCommand,
    remove: removeCommand,
    disable: disableCommand,
    enable: enableCommand,
    test: testCommand,
    deliveries: deliveriesCommand,
    replay: replayCommand,
    'rotate-secret': rotateSecretCommand,
  },
});
