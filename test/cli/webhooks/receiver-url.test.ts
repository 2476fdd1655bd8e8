import assert from 'node:assert/strict';
import { test } from 'node:test';
import { receiverUrl } from '../../../src/cli/webhooks/receiver-url.js';
import { CliError, EXIT_USAGE } from '../../../src/cli/io.js';

/** A URL the servers refuse is refused by the CLI too, unless the CLI runs with WEBHOOKS_ALLOW_PRIVATE=true: then it warns. */

async function check(raw: string, allowPrivate: boolean): Promise<{ url?: string; refused?: string; warned: string }> {
  let warned = '';
  try {
    const url = await receiverUrl(raw, allowPrivate, { stderr: (s) => (warned += s) });
    return { url, warned };
  } catch (err) {
    assert.ok(err instanceof CliError);
    assert.equal(err.exitCode, EXIT_USAGE);
    return { refused: err.message, warned };
  }
}

const PRIVATE_ADDRESS = 'a private address (loopback, private, link-local, multicast or unspecified); WEBHOOKS_ALLOW_PRIVATE=true allows it';
const NEEDS_IT_TOO =
  'Every server that delivers webhooks needs WEBHOOKS_ALLOW_PRIVATE=true too; without it each delivery fails and is retried until the endpoint is disabled.\n';

test('without WEBHOOKS_ALLOW_PRIVATE a URL the servers refuse is refused, saying why and naming the setting', async () => {
  assert.deepEqual(await check('http://127.0.0.1:9/hook', false), {
    refused: '--url is refused: only https URLs are accepted (http too with WEBHOOKS_ALLOW_PRIVATE=true)',
    warned: '',
  });
  assert.deepEqual(await check('https://10.1.2.3/hook', false), { refused: `--url is refused: 10.1.2.3 is ${PRIVATE_ADDRESS}`, warned: '' });
  const named = await check('https://localhost/hook', false);
  assert.match(named.refused ?? '', new RegExp(`^--url is refused: localhost resolves to (127\\.0\\.0\\.1|::1), ${PRIVATE_ADDRESS.replace(/[()]/g, '\\$&')}$`));
  assert.deepEqual(await check('https://93.184.216.34/hook', false), { url: 'https://93.184.216.34/hook', warned: '' });
});

test('with WEBHOOKS_ALLOW_PRIVATE=true the CLI accepts it and warns that the servers need the setting too', async () => {
  assert.deepEqual(await check('http://127.0.0.1:9/hook', true), {
    url: 'http://127.0.0.1:9/hook',
    warned:
      'warning: a server without WEBHOOKS_ALLOW_PRIVATE=true refuses this URL: only https URLs are accepted (http too with WEBHOOKS_ALLOW_PRIVATE=true).\n' +
      NEEDS_IT_TOO,
  });
  assert.deepEqual(await check('https://192.168.1.20/hook', true), {
    url: 'https://192.168.1.20/hook',
    warned: `warning: a server without WEBHOOKS_ALLOW_PRIVATE=true refuses this URL: 192.168.1.20 is ${PRIVATE_ADDRESS}.\n${NEEDS_IT_TOO}`,
  });
  // A public receiver needs no setting: no warning.
  assert.deepEqual(await check('https://93.184.216.34/hook', true), { url: 'https://93.184.216.34/hook', warned: '' });
});

test('what the setting does not allow stays refused, with no warning', async () => {
  assert.deepEqual(await check('https://user:hunter2@127.0.0.1/hook', true), { refused: '--url is refused: a webhook URL may not hold credentials', warned: '' });
  assert.deepEqual(await check('ftp://127.0.0.1/hook', true), { refused: '--url is refused: only http and https URLs are accepted', warned: '' });
  assert.deepEqual(await check('not a url', true), { refused: '--url is refused: not a URL', warned: '' });
  assert.deepEqual(await check(`https://93.184.216.34/${'a'.repeat(2048)}`, true), { refused: '--url must be at most 2048 characters', warned: '' });
});
