import type { FastifyInstance } from 'fastify';
import { docsPage, DOCS_PATH } from '../docs-page/page.js';
import { ApiError } from '../errors.js';
import { sendAnswer } from '../http/fastify-pipeline.js';

/**
 * GET /docs: the API reference (src/docs-page/), without a key, like the document; its files under
 * /docs/assets/, anything else under /docs is 404. Every other rule of the pipeline applies as to
 * any answer; the page's own Content-Security-Policy is kept (the pipeline sets the JSON policy
 * only where an answer has none).
 */
export function docsRoutes(openApiDocument: Record<string, unknown>) {
  const docs = docsPage(openApiDocument);
  return async (app: FastifyInstance): Promise<void> => {
    const config = { access: 'public', operation: 'docs' } as const;
    for (const url of [DOCS_PATH, `${DOCS_PATH}/`]) {
      app.get(url, { config }, async (request, reply) => sendAnswer(reply, (await docs.page()).answer(request)));
    }
    app.get(`${DOCS_PATH}/*`, { config }, async (request, reply) => {
      const asset = await docs.file((request.params as { '*': string })['*']);
      if (!asset) throw new ApiError('not_found', `No such file; the API reference is at ${DOCS_PATH}.`);
      return sendAnswer(reply, await asset.answer(request));
    });
  };
}
