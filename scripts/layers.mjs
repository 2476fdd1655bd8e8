/**
 * The layers of src/, bottom first, as docs/architecture.md draws them: a file may import from its
 * own layer and those below, never from one above. eslint.config.js turns this table into
 * no-restricted-imports rules, and no-restricted-syntax rules for import(), so an import that runs
 * back up, static or dynamic, fails `npm run lint`.
 */
export const LAYERS = [
  ['errors.ts', 'json.ts', 'schemas'],
  ['domain'],
  ['store'],
  ['auth', 'cache', 'limits', 'config', 'config.ts', 'prune-timer.ts', 'expiry-timer.ts', 'webhooks', 'relay'],
  ['operations'],
  ['openapi'],
  ['pipeline'],
  ['metrics'],
  ['http'],
  ['docs-page'],
  ['routes'],
  ['app.ts', 'first-run.ts'],
  ['server.ts', 'stop-signals.ts', 'port-in-use.ts'],
  ['cluster.ts'],
  ['cli'],
];

/** Folders nest this deep at most below a layer's own folder (src/cli/import/*.ts is 1). */
const MAX_NESTING = 3;

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** One pattern per layer above: what an import written from `depth` folders below src/ looks like when it reaches it. */
function patternsAbove(index, depth) {
  const up = depth === 0 ? '\\./' : escape('../'.repeat(depth));
  return LAYERS.slice(index + 1).map((layer) => {
    const names = layer.map((name) => (name.endsWith('.ts') ? `${escape(name.slice(0, -3))}\\.js$` : `${escape(name)}/`));
    return {
      regex: `^${up}(${names.join('|')})`,
      message: `src/ is layered (docs/architecture.md): this file may not import from ${layer.join(', ')}, a layer above its own.`,
    };
  });
}

/**
 * The same patterns for import() (ESLint's no-restricted-imports sees only static imports), as
 * no-restricted-syntax selectors on its string, or its template's text before the first ${}. A
 * selector's regex cannot hold a slash: each is written \x2F.
 */
function dynamicImportsOf(patterns) {
  return patterns.map(({ regex, message }) => {
    const source = `/${regex.replaceAll('/', '\\x2F')}/`;
    return { selector: `ImportExpression:matches([source.value=${source}], [source.quasis.0.value.cooked=${source}])`, message };
  });
}

/** The rules refusing `patterns`, written as static imports, re-exports or import(). */
function restrictedImports(patterns) {
  return { 'no-restricted-imports': ['error', { patterns }], 'no-restricted-syntax': ['error', ...dynamicImportsOf(patterns)] };
}

/** The ESLint config blocks that enforce LAYERS, one per layer entry and folder depth. */
export function layerRules() {
  const blocks = [];
  LAYERS.forEach((layer, index) => {
    for (const name of layer) {
      const globs = name.endsWith('.ts')
        ? [[`src/${name}`, 0]]
        : Array.from({ length: MAX_NESTING + 1 }, (_, nesting) => [`src/${name}/${'*/'.repeat(nesting)}*.ts`, nesting + 1]);
      for (const [glob, depth] of globs) {
        const patterns = patternsAbove(index, depth);
        if (patterns.length > 0) blocks.push({ files: [glob], rules: restrictedImports(patterns) });
      }
    }
  });
  // The dashboard and the client use the service only through its HTTP API (their tests may start it).
  const outside = [
    ['dashboard/src/*.{ts,tsx}', '../../src/'],
    ['clients/typescript/src/*.ts', '../../../src/'],
  ];
  for (const [glob, serviceSources] of outside) {
    const message = 'The dashboard and the client use the service through its HTTP API, never its sources.';
    blocks.push({ files: [glob], rules: restrictedImports([{ regex: `^${escape(serviceSources)}`, message }]) });
  }
  return blocks;
}
