import { commandGroup, type Command } from './command.js';
import { addCommand } from './webhooks/add.js';
import { deliveriesCommand, listCommand } from './webhooks/list.js';
import { updateCommand } from './webhooks/update.js';
import { disableCommand, enableCommand, removeCommand, replayCommand, rotateSecretCommand } from './webhooks/state.js';
import { testCommand } from './webhooks/test-delivery.js';

/** The webhooks command group: endpoints and their delivery log, managed by the operator. */
export const webhooksCommand: Command = commandGroup({
  name: 'webhooks',
  summary: 'add, list, test and manage webhook endpoints',
  description:
    'Manages the webhook endpoints every change event is POSTed to, signed (Standard Webhooks), each pet\'s in order.\n' +
    'Reads WEBHOOKS_ALLOW_PRIVATE and WEBHOOK_TIMEOUT_MS as the server does.',
  commands: {
    add: addCommand,
    list: listCommand,
    update: updateCommand,
    remove: removeCommand,
    disable: disableCommand,
    enable: enableCommand,
    test: testCommand,
    deliveries: deliveriesCommand,
    replay: replayCommand,
    'rotate-secret': rotateSecretCommand,
  },
});
