import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/**
 * Headless Chromium for the browser tests (and the dashboard benchmark): Debian's package, driven by
 * playwright-core, so nothing is downloaded and the browser holds no profile of its own between runs.
 */

export const CHROMIUM = '/usr/bin/chromium';
/** So the browser itself calls nowhere: no update checks, no sync, no QUIC probes. */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'];
/** Screenshots and other files a run leaves for people to look at (ignored by git). */
export const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
/** How long one browser action (a click, a wait, a screenshot) may take before it fails, where a test sets no timeout of its own. */
const BROWSER_ACTION_TIMEOUT_MS = 90_000;

const IN_CI = process.env.CI === 'true';

/**
 * The `skip` of a file's browser tests: a reason, said once on stderr, when Chromium is missing; false
 * when it is there, or when CI=true, where the tests must run and fail instead of passing unseen.
 */
export function browserSkip(what: string): string | false {
  if (existsSync(CHROMIUM) || IN_CI) return false;
  process.stderr.write(
    `Browser tests of ${what} SKIPPED: ${CHROMIUM} is missing. Install Debian's package: "apt-get install -y chromium" ` +
      '(never "npx playwright install"); with CI=true they fail instead.\n',
  );
  return `${CHROMIUM} is missing (apt-get install -y chromium)`;
}

function assertChromium(): void {
  if (!existsSync(CHROMIUM)) throw new Error(`${IN_CI ? 'CI=true but ' : ''}${CHROMIUM} is missing: install it with "apt-get install -y chromium"`);
}

/** Debian's Chromium with a fresh profile, removed when the test ends. */
export async function launchChromium(t: TestContext): Promise<BrowserContext> {
  assertChromium();
  const profile = await mkdtemp(join(tmpdir(), 'chromium-profile-'));
  const launched = chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  });
  // One hook, as after hooks run in the order they were added: the browser exits before its profile is removed.
  t.after(async () => {
    await (await launched.catch(() => undefined))?.close();
    await rm(profile, { recursive: true, force: true });
  });
  return launched.then((context) => {
    // Playwright's default of 30 s per action is too short for a page's work on a machine whose cores a whole CI
    // run shares (a full-page screenshot of the docs took longer): the tests' own deadlines still end a real hang.
    context.setDefaultTimeout(BROWSER_ACTION_TIMEOUT_MS);
    return context;
  });
}

/**
 * One browser for many tests (each opens a context of its own: fresh storage, no shared cache); the
 * caller closes it. Launching costs about a second on a shared machine, a context a few milliseconds.
 */
export async function startChromium(): Promise<Browser> {
  assertChromium();
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/** Every request the browser made, and what became of it. */
export interface Traffic {
  requests: string[];
  failed: string[];
  /** "STATUS URL" of every answer of 400 or more. */
  refused: string[];
  consoleErrors: string[];
  /** Console warnings (Scalar's "document validation errors", say), with what they were logged with. */
  consoleWarnings: string[];
}

export function recordTraffic(context: BrowserContext, page: Page): Traffic {
  const traffic: Traffic = { requests: [], failed: [], refused: [], consoleErrors: [], consoleWarnings: [] };
  context.on('request', (request) => traffic.requests.push(request.url()));
  context.on('requestfailed', (request) => traffic.failed.push(`${request.url()}: ${request.failure()?.errorText}`));
  context.on('response', (response) => {
    if (response.status() >= 400) traffic.refused.push(`${response.status()} ${response.url()}`);
  });
  // A policy violation (a script, font or call to another host) shows here first.
  page.on('console', (message) => {
    if (message.type() === 'error') traffic.consoleErrors.push(message.text());
    if (message.type() === 'warning') traffic.consoleWarnings.push(message.text());
  });
  page.on('pageerror', (err) => traffic.consoleErrors.push(`uncaught: ${err.message}`));
  return traffic;
}
