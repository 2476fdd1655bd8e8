/** Where the interactive reference mounts, hidden (class docs-pending) until it has rendered. */
export const APP_ID = 'app';

/** A server of the OpenAPI document. */
export interface Server {
  /** Its base URL, absolute or relative to the document. */
  url: string;
  /** What it is (Production, Staging). */
  description?: string;
}

/** What the start script is given, written into it. */
export interface StartSettings {
  /** The OpenAPI document's URL. */
  documentUrl: string;
  /** The API's path on this origin (/v1): "try it" goes there first. */
  apiPrefix: string;
  /** The document's servers. */
  servers: readonly Server[];
  /** The summary of the document's first operation: once Scalar shows it, Scalar's view is ready. */
  firstOperation: string;
  /** The id of the server-rendered first view, removed when Scalar's view takes over. */
  firstViewId: string;
}

/**
 * The script that starts Scalar on the page, with its settings written in; a file of its own, so
 * the page runs no inline script. The page shows its server-rendered first view at once; this
 * script loads Scalar's bundle (named by its tag's data-scalar) only after that first paint, so
 * the bundle's seconds of work never delay it, renders Scalar's view hidden, and swaps it in once
 * it shows the first operation, keeping the heading the reader was at in place. "Try it" goes to
 * this server first (the origin the page came from), then the document's other servers; nothing
 * leaves for Scalar's services: no proxy, no fonts, no telemetry, no agent, no developer toolbar.
 */
export function startScript(settings: StartSettings): string {
  return `'use strict';
(() => {
  const settings = ${JSON.stringify(settings)};
  const bundle = document.currentScript.dataset.scalar;
  const app = document.getElementById(${JSON.stringify(APP_ID)});
  const firstView = document.getElementById(settings.firstViewId);
  const status = firstView.querySelector('[role=status]');
  status.hidden = false;

  const here = new URL(settings.apiPrefix, location.href).href;
  const absolute = settings.servers.map((server) => ({ ...server, url: new URL(server.url, location.href).href }));
  const listed = absolute.filter((server) => server.url === here);
  const servers = [...(listed.length > 0 ? listed.slice(0, 1) : [{ url: here, description: 'This server' }]), ...absolute.filter((server) => server.url !== here)];

  const headings = (root) => [...root.querySelectorAll('h1, h2, h3')];
  const takeOver = () => {
    // The first heading in the window, and where it is, to put Scalar's same heading there.
    const kept = scrollY > 0 ? headings(firstView).find((h) => h.getBoundingClientRect().bottom > 0) : undefined;
    const offset = kept ? kept.getBoundingClientRect().top : 0;
    firstView.remove();
    app.classList.remove('docs-pending');
    const same = kept && headings(app).find((h) => h.textContent.trim() === kept.textContent.trim());
    if (same) scrollBy(0, same.getBoundingClientRect().top - offset);
  };
  const shown = () => [...app.getElementsByTagName('h3')].some((h) => h.textContent.trim() === settings.firstOperation);
  const start = () => {
    const watcher = new MutationObserver(() => {
      if (!shown()) return;
      watcher.disconnect();
      takeOver();
    });
    watcher.observe(app, { childList: true, subtree: true, characterData: true });
    Scalar.createApiReference('#' + app.id, {
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
  };
  const load = () => {
    const script = document.createElement('script');
    script.src = bundle;
    script.addEventListener('load', start);
    script.addEventListener('error', () => (status.textContent = 'The interactive reference could not be loaded; reload the page to try again.'));
    document.body.append(script);
  };
  // After the first paint: a frame's callbacks run just before it paints, a task queued from one runs after.
  if (document.visibilityState === 'visible') requestAnimationFrame(() => setTimeout(load, 0));
  else load();
})();
`;
}
