import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';
import { sendAnswer } from '../http/fastify-pipeline.js';
import { HtmlPage } from '../http/html-page.js';
import { loadOnce } from '../http/load-once.js';
import { DEFAULT_DASHBOARD_DIRECTORY, readDashboard } from './dashboard-files.js';

export const DASHBOARD_PATH = '/dashboard';

/**
 * The page's policy: its scripts, styles, fonts and images are files of this service (no inline
 * script or style, no eval), images may also be data: URLs, and it calls only its own origin (/v1).
 */
export const DASHBOARD_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface DashboardOptions {
  /** Where the built dashboard is (index.html, assets/); default the project's dist/dashboard. Tests point it at fixtures. */
  directory?: string;
}

/**
 * The staff dashboard, a single-page app the build writes into dist/dashboard: GET /dashboard (and
 * /dashboard/) is its index.html, /dashboard/assets/... its content-named files, and GET / sends a
 * browser there. Like /docs, they need no key (the app asks for one, and every /v1 call it makes
 * needs it); other methods get the pipeline's usual 401, then 405. Anything else under /dashboard
 * is 404. The files are read and compressed once, at the first request; while there is no build,
 * /dashboard answers 503 and the next request looks again.
 */
export function dashboardRoutes({ directory = DEFAULT_DASHBOARD_DIRECTORY }: DashboardOptions = {}) {
  // A failed read (no build yet) is not kept: the next request tries again.
  const dashboard = loadOnce(async () => {
    const { page, assets } = await readDashboard(directory);
    return { page: new HtmlPage(page, DASHBOARD_CONTENT_SECURITY_POLICY), assets };
  });

  return async (app: FastifyInstance): Promise<void> => {
    const config = { access: 'public', operation: 'dashboard' } as const;
    app.get('/', { config }, async (_request, reply) => sendAnswer(reply, { status: 302, headers: { location: DASHBOARD_PATH } }));
    for (const url of [DASHBOARD_PATH, `${DASHBOARD_PATH}/`]) {
      app.get(url, { config }, async (request, reply) => sendAnswer(reply, (await dashboard()).page.answer(request)));
    }
    app.get(`${DASHBOARD_PATH}/*`, { config }, async (request, reply) => {
      const asset = (await dashboard()).assets.get((request.params as { '*': string })['*']);
      if (!asset) throw new ApiError('not_found', `No such file; the dashboard is at ${DASHBOARD_PATH}.`);
      return sendAnswer(reply, await asset.answer(request));
    });
  };
}
