/** The stream every event goes to, unless a test names another. */
export const DEFAULT_STREAM = 'INVENTORY_EVENTS';
/** The subjects' prefix: an event is published on `inventory.events.<type>`, e.g. inventory.events.inventory.updated. */
export const SUBJECT_PREFIX = 'inventory.events';
