import type { FastifyInstance } from 'fastify';
import { JSON_MEDIA_TYPES, parseJsonBody } from '../operations/body.js';

/**
 * Replaces Fastify's body parsers with the one strict JSON parser both lanes use: any other media
 * type or a content coding is 415, bad JSON is malformed_json, and prototype keys are refused before anything sees the body.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser([...JSON_MEDIA_TYPES], { parseAs: 'string' }, (request, text, done) => {
    try {
      done(null, parseJsonBody(request.headers, text as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}
