import { APP_ID } from './start.js';

/**
 * The style sheet of the reference page's first view (a file, as the page allows no inline style of
 * its own), close to Scalar's light theme so the swap to Scalar's view does not jar; every rule is
 * under the first view's class, so none reaches Scalar's view.
 */
export const FIRST_VIEW_CSS = `#${APP_ID}.docs-pending { visibility: hidden; position: absolute; top: 0; left: 0; width: 100%; }
.docs-first-view { --docs-text: #1b1b1b; --docs-muted: #5c5c5c; --docs-line: #e4e4e4; --docs-soft: #f6f6f6;
  font: 16px/1.6 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--docs-text); }
.docs-first-view code { font: 0.85em/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--docs-soft); border-radius: 3px; padding: 0.1em 0.3em; }
.docs-first-view a { color: inherit; }
.docs-first-view .docs-nav { position: fixed; top: 0; bottom: 0; left: 0; width: 288px; box-sizing: border-box; overflow-y: auto;
  padding: 16px 12px; border-right: 1px solid var(--docs-line); background: var(--docs-soft); font-size: 14px; }
.docs-first-view .docs-nav ul { list-style: none; margin: 0; padding: 0; }
.docs-first-view .docs-nav ul ul { margin: 4px 0 12px; }
.docs-first-view .docs-nav-tag { display: block; padding: 6px 8px; font-weight: 600; }
.docs-first-view .docs-nav a { display: flex; justify-content: space-between; gap: 8px; padding: 6px 8px 6px 20px; border-radius: 6px; text-decoration: none; }
.docs-first-view .docs-nav a:hover, .docs-first-view .docs-nav a:focus-visible { background: var(--docs-line); }
.docs-first-view .docs-loading { margin: 16px 8px; color: var(--docs-muted); }
.docs-first-view .docs-main { margin-left: 288px; padding: 48px 60px 96px; max-width: 820px; }
.docs-first-view .docs-versions span { font-size: 13px; color: var(--docs-muted); border: 1px solid var(--docs-line); border-radius: 12px; padding: 1px 7px; }
.docs-first-view h1 { font-size: 24px; margin: 8px 0; }
.docs-first-view h2 { font-size: 20px; margin: 32px 0 8px; }
.docs-first-view .docs-tag > h2 { font-size: 24px; margin-top: 72px; padding-top: 24px; border-top: 1px solid var(--docs-line); }
.docs-first-view h3 { font-size: 24px; margin: 4px 0 8px; }
.docs-first-view h4 { font-size: 16px; margin: 24px 0 8px; }
.docs-first-view .docs-operation { margin-top: 72px; }
.docs-first-view .docs-badge { display: inline-block; margin: 0; font-size: 12px; font-weight: 600; text-transform: uppercase; letter-spacing: 0.04em;
  color: #8a4b00; background: #fff1dc; border-radius: 4px; padding: 1px 6px; }
.docs-first-view .docs-endpoint code { background: none; padding: 0; font-size: 15px; }
.docs-first-view .docs-method { font: 600 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; color: #0a7ea4; }
.docs-first-view .docs-method-post { color: #0a8a3b; }
.docs-first-view .docs-method-put, .docs-first-view .docs-method-patch { color: #b26b00; }
.docs-first-view .docs-method-delete { color: #c0262d; }
.docs-first-view .docs-required { font-size: 12px; color: #b26b00; }
.docs-first-view table { border-collapse: collapse; width: 100%; font-size: 14px; margin: 8px 0 16px; }
.docs-first-view th, .docs-first-view td { border: 1px solid var(--docs-line); padding: 6px 10px; text-align: left; vertical-align: top; }
.docs-first-view th { background: var(--docs-soft); }
.docs-first-view td p { margin: 0; }
.docs-first-view .docs-note { color: var(--docs-muted); }
@media (max-width: 800px) {
  .docs-first-view .docs-nav { display: none; }
  .docs-first-view .docs-main { margin-left: 0; padding: 24px 16px 64px; }
}
`;
