import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';
import { JAVASCRIPT_CONTENT_TYPE } from '../http/content-type.js';
import { sendAnswer } from '../http/fastify-pipeline.js';
import { HtmlPage } from '../http/html-page.js';
import { loadOnce } from '../http/load-once.js';
import { StaticAsset } from '../http/static-asset.js';
import { getOpenApiDocument } from '../operations/openapi-document.js';
import { API_PREFIX } from '../openapi/document.js';
import { scalarBundle } from './docs-assets.js';

const DOCS_PATH = '/docs';

interface Server {
  url: string;
  description?: string;
}

/** What the page needs of the OpenAPI document: its title and its servers. */
interface DocsDocument {
  info: { title: string };
  servers: readonly Server[];
}

/** The document's title and servers, checked once, at start. */
function docsDocument(document: Record<string, unknown>): DocsDocument {
  const { info, servers } = document as Partial<DocsDocument>;
  if (typeof info?.title !== 'string' || !Array.isArray(servers) || !servers.every((server: Partial<Server>) => typeof server.url === 'string')) {
    throw new Error('the OpenAPI document lacks info.title or servers');
  }
  return { info, servers };
}

/**
 * The policy of the docs page: everything from this service, scripts from files only (no inline
 * script, no eval); inline styles, since Scalar injects its CSS and styles elements; requests
 * ("try it") to this service and to the document's servers, nowhere else.
 */
function docsContentSecurityPolicy(document: DocsDocument): string {
  // A relative server URL (the default, /v1) is this origin: 'self'.
  const origins = [...new Set(document.servers.filter((server) => URL.canParse(server.url)).map((server) => new URL(server.url).origin))];
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "font-src 'self' data:",
    "img-src 'self' data:",
    ["connect-src 'self'", ...origins].join(' '),
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * The script that starts Scalar on the page, with its settings written in; a file of its own, so
 * the page runs no inline script. "Try it" goes to this server first (the origin the page came
 * from), then the document's other servers; nothing leaves for Scalar's services: no proxy, no
 * fonts, no telemetry, no agent, no developer toolbar.
 */
function startScript(document: DocsDocument): string {
  const settings = { documentUrl: getOpenApiDocument.path, apiPrefix: API_PREFIX, servers: document.servers };
  return `'use strict';
(() => {
  const settings = ${JSON.stringify(settings)};
  const here = new URL(settings.apiPrefix, location.href).href;
  const absolute = settings.servers.map((server) => ({ ...server, url: new URL(server.url, location.href).href }));
  const listed = absolute.filter((server) => server.url === here);
  const servers = [...(listed.length > 0 ? listed.slice(0, 1) : [{ url: here, description: 'This server' }]), ...absolute.filter((server) => server.url !== here)];
  Scalar.createApiReference('#app', {
    url: settings.documentUrl,
    servers,
    proxyUrl: '',
    withDefaultFonts: false,
    telemetry: false,
    agent: { disabled: true },
    showDeveloperTools: 'never',
    documentDownloadType: 'direct',
    persistAuth: false,
    defaultOpenAllTags: true,
    authentication: { preferredSecurityScheme: 'bearerAuth' },
    _integration: 'fastify',
  });
})();
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function pageHtml(title: string, scripts: readonly StaticAsset[]): string {
  const tags = scripts.map((asset) => `    <script src="${DOCS_PATH}/${asset.file}"></script>\n`).join('');
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${escapeHtml(title)}: API reference</title>
    <link rel="icon" href="data:,">
  </head>
  <body>
    <noscript>This page needs JavaScript. The OpenAPI document is at <a href="${getOpenApiDocument.path}">${getOpenApiDocument.path}</a>.</noscript>
    <div id="app"></div>
${tags}  </body>
</html>
`;
}

/**
 * GET /docs: the API reference, rendered in the browser by Scalar from /v1/openapi.json, without a
 * key (like the document). Everything it loads comes from here: /docs/assets/ holds Scalar's
 * bundle and the start script under content-hashed names; anything else under /docs is 404.
 * Every other rule of the pipeline applies as to any answer; the page brings its own
 * Content-Security-Policy, which the pipeline keeps (it sets the JSON policy only where an answer has none).
 */
export function docsRoutes(openApiDocument: Record<string, unknown>) {
  const document = docsDocument(openApiDocument);
  const start = StaticAsset.named('docs', 'js', JAVASCRIPT_CONTENT_TYPE, Buffer.from(startScript(document)));
  const policy = docsContentSecurityPolicy(document);
  // Made at the first request, with Scalar's bundle: only then is the bundle's name known.
  const docsPage = loadOnce(async () => new HtmlPage(pageHtml(document.info.title, [await scalarBundle(), start]), policy));

  return async (app: FastifyInstance): Promise<void> => {
    const config = { access: 'public', operation: 'docs' } as const;
    for (const url of [DOCS_PATH, `${DOCS_PATH}/`]) {
      app.get(url, { config }, async (request, reply) => sendAnswer(reply, (await docsPage()).answer(request)));
    }
    app.get(`${DOCS_PATH}/*`, { config }, async (request, reply) => {
      const name = (request.params as { '*': string })['*'];
      const asset = name === start.file ? start : name.startsWith('assets/scalar-') ? await scalarBundle() : undefined;
      if (asset?.file !== name) throw new ApiError('not_found', `No such file; the API reference is at ${DOCS_PATH}.`);
      return sendAnswer(reply, await asset.answer(request));
    });
  };
}
