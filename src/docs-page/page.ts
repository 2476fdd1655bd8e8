import { fileTypeOf, JAVASCRIPT_CONTENT_TYPE } from '../http/content-type.js';
import { HtmlPage } from '../http/html-page.js';
import { loadOnce } from '../http/load-once.js';
import { StaticAsset } from '../http/static-asset.js';
import { getOpenApiDocument } from '../operations/openapi-document.js';
import { API_PREFIX } from '../openapi/document.js';
import { FIRST_VIEW_ID, firstViewHtml, operationsByTag, type ReferenceDocument } from './first-view.js';
import { escapeHtml } from './markdown.js';
import { scalarBundle } from './scalar-bundle.js';
import { APP_ID, startScript, type Server } from './start.js';
import { FIRST_VIEW_CSS } from './style.js';

/** Where the page is served; its files are under it. */
export const DOCS_PATH = '/docs';

/** What the page needs of the OpenAPI document: what the first view shows, and the servers "try it" calls. */
interface DocsDocument extends ReferenceDocument {
  servers: readonly Server[];
}

/** The document's title, servers and operations, checked once, at start. */
function docsDocument(document: Record<string, unknown>): DocsDocument {
  const { info, servers, paths } = document as Partial<DocsDocument>;
  if (typeof info?.title !== 'string' || !Array.isArray(servers) || !servers.every((server: Partial<Server>) => typeof server.url === 'string')) {
    throw new Error('the OpenAPI document lacks info.title or servers');
  }
  if (typeof paths !== 'object' || Object.keys(paths).length === 0) throw new Error('the OpenAPI document has no operations');
  return document as unknown as DocsDocument;
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

/** The page: the first view, Scalar's hidden mount point, the start script (which loads Scalar's bundle after the first paint). */
function pageHtml(document: DocsDocument, files: { style: StaticAsset; start: StaticAsset; scalar: StaticAsset }): string {
  const path = (asset: StaticAsset) => `${DOCS_PATH}/${asset.file}`;
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${escapeHtml(document.info.title)}: API reference</title>
    <link rel="icon" href="data:,">
    <link rel="stylesheet" href="${path(files.style)}">
  </head>
  <body>
${firstViewHtml(document, getOpenApiDocument.path)}
    <div id="${APP_ID}" class="docs-pending"></div>
    <script src="${path(files.start)}" data-scalar="${path(files.scalar)}"></script>
  </body>
</html>
`;
}

/** The API reference page and its files. */
export interface DocsPage {
  /** The page: the first view, then Scalar's interactive reference in its place. */
  page(): Promise<HtmlPage>;
  /** The file under DOCS_PATH named `name` (the style sheet, the start script, Scalar's bundle), or undefined. */
  file(name: string): Promise<StaticAsset | undefined>;
}

/**
 * The API reference of `openApiDocument` (checked now, at start): first the document as
 * server-side HTML, shown at once, then Scalar's interactive reference, rendered in the browser
 * from the served document, in its place. Everything it loads comes from the service: its files
 * (the style sheet, the start script and Scalar's bundle) have content-hashed names. The page
 * brings its own Content-Security-Policy.
 */
export function docsPage(openApiDocument: Record<string, unknown>): DocsPage {
  const document = docsDocument(openApiDocument);
  const firstOperation = operationsByTag(document)[0]!.operations[0]!.operation.summary;
  const settings = { documentUrl: getOpenApiDocument.path, apiPrefix: API_PREFIX, servers: document.servers, firstOperation, firstViewId: FIRST_VIEW_ID };
  // Made at the first request, not at start: compressing them took a tenth of the server's start.
  const assets = loadOnce(async () => {
    const start = StaticAsset.named('docs', 'js', JAVASCRIPT_CONTENT_TYPE, Buffer.from(startScript(settings)));
    const style = StaticAsset.named('docs', 'css', fileTypeOf('docs.css').contentType, Buffer.from(FIRST_VIEW_CSS));
    return { start, style, files: new Map([start, style].map((asset) => [asset.file, asset])) };
  });
  const policy = docsContentSecurityPolicy(document);
  // Made at the first request, with Scalar's bundle: only then is the bundle's name known.
  const page = loadOnce(async () => {
    const { start, style } = await assets();
    return new HtmlPage(pageHtml(document, { style, start, scalar: await scalarBundle() }), policy);
  });
  return {
    page,
    file: async (name) => {
      const asset = (await assets()).files.get(name) ?? (name.startsWith('assets/scalar-') ? await scalarBundle() : undefined);
      return asset?.file === name ? asset : undefined;
    },
  };
}
