import { KEY_CACHE_TTL_MS } from '../auth/authenticator.js';
import { issueApiKey } from '../auth/issue-key.js';
import { isScope, KEY_PREFIX, keyUnusableReason, SCOPES, type ApiKeyRecord, type Scope } from '../domain/api-key.js';
import { DURATION_FORMAT, parseDuration } from '../domain/duration.js';
import { CliError, EXIT_USAGE } from './io.js';
import { commandGroup, parseCommandArgs, printHelp, type Command } from './command.js';
import { withExistingStore, withStore } from './store-access.js';
import { formatTable, formatTime } from './table.js';

const NAME_MAX = 100;
const DEFAULT_SCOPES: Scope[] = ['inventory:read'];
const HELP_OPTION = { type: 'boolean', short: 'h' } as const;

const CREATE_HELP = `Usage: petstore-inventory keys create --name NAME [--scope SCOPE]... [--expires-in DURATION] [--json]

Creates an API key in the store DATABASE_URL names, for the environment INVENTORY_ENV names
(production keys start with ${KEY_PREFIX.production}, staging keys with ${KEY_PREFIX.staging}).
The key is printed once, alone on stdout; only its SHA-256 hash is stored, so keep it now.

Options:
  --name NAME            who or what uses the key (required, at most ${NAME_MAX} characters)
  --scope SCOPE          inventory:read (list stock), inventory:write (list and set stock),
                         reservations:write (a storefront's: hold, commit and release stock,
                         read it, set no count) or webhooks:manage (GET /v1/webhooks: the
                         webhook endpoints); repeat it for several; inventory:read is added
                         to a key given no inventory scope.
                         Default: inventory:read only (least privilege)
  --expires-in DURATION  the key stops working after this long: 3600s, 90m, 12h, 30d or 2w
                         (s, m, h, d, w; at most 3650d). Default: it never expires
  --json                 print one JSON object: id, key, name, scopes, environment,
                         createdAt, expiresAt
  -h, --help             show this help
`;

const LIST_HELP = `Usage: petstore-inventory keys list [--json]

Lists the API keys in the store DATABASE_URL names: id, name, environment, scopes, the key's
last four characters, when it was created, last used and expires, and whether it is active,
revoked or expired. The keys themselves are never shown: only their hashes are stored.

Options:
  --json      print a JSON array instead of a table
  -h, --help  show this help
`;

const REVOKE_HELP = `Usage: petstore-inventory keys revoke ID

Revokes the key with this id (the key_... id that "keys list" shows, not the key itself).
It is refused by every server on the same store within ${KEY_CACHE_TTL_MS / 1000} seconds: no server is told,
and each one keeps a key it looked up for that long before it asks the store again.

Options:
  -h, --help  show this help
`;

const createCommand: Command = {
  summary: 'create a key and print it (shown only once)',
  async run(args, io) {
    const { values } = parseCommandArgs({
      args,
      options: {
        name: { type: 'string' },
        scope: { type: 'string', multiple: true },
        'expires-in': { type: 'string' },
        json: { type: 'boolean' },
        help: HELP_OPTION,
      },
      strict: true,
    });
    if (values.help) return printHelp(io, CREATE_HELP);
    const name = checkName(values.name);
    const scopes = checkScopes(values.scope ?? DEFAULT_SCOPES);
    const expiresAt = checkExpiry(values['expires-in']);
    const { key, record } = await withStore(io, ['keys'], ({ keys }, config) =>
      issueApiKey(keys, { name, environment: config.environment, scopes, expiresAt }),
    );
    io.stdout(values.json ? `${JSON.stringify(createdKeyJson(key, record))}\n` : `${key}\n`);
    io.stderr(
      `Created API key ${record.id} (name "${record.name}", ${record.environment}, scopes ${record.scopes.join(', ')}, ` +
        `${record.expiresAt ? `expires ${formatTime(record.expiresAt)}` : 'never expires'}).\n` +
        'Store it now: it is shown only once.\n',
    );
    return 0;
  },
};

const listCommand: Command = {
  summary: 'list keys (never the keys themselves)',
  async run(args, io) {
    const { values } = parseCommandArgs({ args, options: { json: { type: 'boolean' }, help: HELP_OPTION }, strict: true });
    if (values.help) return printHelp(io, LIST_HELP);
    const records = await withExistingStore(io, ['keys'], ({ keys }) => keys.listApiKeys());
    const now = new Date();
    if (values.json) {
      io.stdout(`${JSON.stringify(records.map((r) => listedKeyJson(r, now)))}\n`);
    } else if (records.length === 0) {
      io.stdout('No API keys yet. Create one with: petstore-inventory keys create --name NAME\n');
    } else {
      io.stdout(formatTable(KEY_TABLE_HEADER, records.map((r) => keyTableRow(r, now))));
    }
    return 0;
  },
};

const revokeCommand: Command = {
  summary: `revoke a key (every server refuses it within ${KEY_CACHE_TTL_MS / 1000} s)`,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs({ args, options: { help: HELP_OPTION }, strict: true, allowPositionals: true });
    if (values.help) return printHelp(io, REVOKE_HELP);
    const [id] = positionals;
    if (id === undefined || positionals.length > 1) {
      throw new CliError('keys revoke takes exactly one key id (see "petstore-inventory keys list")', EXIT_USAGE);
    }
    // Someone who pastes the key itself must not see it echoed back: keys never appear in messages.
    if (Object.values(KEY_PREFIX).some((prefix) => id.startsWith(prefix))) {
      throw new CliError('that is an API key, not a key id: pass the key_... id that "petstore-inventory keys list" shows', EXIT_USAGE);
    }
    const record = await withExistingStore(io, ['keys'], async ({ keys }) => {
      const found = (await keys.listApiKeys()).find((r) => r.id === id);
      if (!found) throw new CliError(`no API key has the id ${JSON.stringify(id.slice(0, 64))} (see "petstore-inventory keys list")`);
      if (found.revokedAt || !(await keys.revokeApiKey(id, new Date()))) {
        throw new CliError(`API key ${id} ("${found.name}") is already revoked`);
      }
      return found;
    });
    io.stdout(`Revoked API key ${record.id} ("${record.name}").\n`);
    return 0;
  },
};

export const keysCommand: Command = commandGroup({
  name: 'keys',
  summary: 'create, list and revoke API keys',
  description: 'Manages the API keys clients send as "Authorization: Bearer <key>".',
  commands: { create: createCommand, list: listCommand, revoke: revokeCommand },
});

function checkName(raw: string | undefined): string {
  if (raw === undefined) throw new CliError('keys create needs --name NAME (who or what uses the key)', EXIT_USAGE);
  const name = raw.trim();
  if (name === '') throw new CliError('--name must not be empty', EXIT_USAGE);
  if ([...name].length > NAME_MAX) throw new CliError(`--name must be at most ${NAME_MAX} characters`, EXIT_USAGE);
  // A line break or escape code in a name would garble "keys list".
  if (/\p{Cc}/u.test(name)) throw new CliError('--name must not contain control characters', EXIT_USAGE);
  return name;
}

function checkScopes(raw: string[]): Scope[] {
  const bad = raw.find((s) => !isScope(s));
  if (bad !== undefined) throw new CliError(`--scope must be one of ${SCOPES.join(', ')} (got ${JSON.stringify(bad)})`, EXIT_USAGE);
  const scopes = raw.filter(isScope);
  // Every key may read stock: the API's answers (403 only where more is needed) and GET /v1/key count on it.
  return scopes.some((s) => s.startsWith('inventory:')) ? scopes : ['inventory:read', ...scopes];
}

function checkExpiry(raw: string | undefined): Date | null {
  if (raw === undefined) return null;
  const ms = parseDuration(raw);
  if (ms === undefined) throw new CliError(`--expires-in must be ${DURATION_FORMAT} (got ${JSON.stringify(raw)})`, EXIT_USAGE);
  return new Date(Date.now() + ms);
}

function createdKeyJson(key: string, r: ApiKeyRecord) {
  return {
    id: r.id,
    key,
    name: r.name,
    scopes: r.scopes,
    environment: r.environment,
    createdAt: r.createdAt.toISOString(),
    expiresAt: r.expiresAt?.toISOString() ?? null,
  };
}

/** Built field by field, so a new record field (such as keyHash) never leaks into the output. */
function listedKeyJson(r: ApiKeyRecord, now: Date) {
  return {
    id: r.id,
    name: r.name,
    environment: r.environment,
    scopes: r.scopes,
    hint: r.hint,
    createdAt: r.createdAt.toISOString(),
    lastUsedAt: r.lastUsedAt?.toISOString() ?? null,
    expiresAt: r.expiresAt?.toISOString() ?? null,
    revokedAt: r.revokedAt?.toISOString() ?? null,
    state: keyState(r, now),
  };
}

const KEY_TABLE_HEADER = ['ID', 'NAME', 'ENVIRONMENT', 'SCOPES', 'KEY', 'CREATED', 'LAST USED', 'EXPIRES', 'STATE'];

function keyTableRow(r: ApiKeyRecord, now: Date): string[] {
  return [
    r.id,
    r.name,
    r.environment,
    r.scopes.join(','),
    `…${r.hint}`,
    formatTime(r.createdAt),
    r.lastUsedAt ? formatTime(r.lastUsedAt) : 'never',
    r.expiresAt ? formatTime(r.expiresAt) : 'never',
    keyState(r, now),
  ];
}

function keyState(r: ApiKeyRecord, now: Date): 'active' | 'revoked' | 'expired' {
  return keyUnusableReason(r, now) ?? 'active';
}
