import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { contextOf, sendAnswer } from '../http/fastify-pipeline.js';
import { shuttingDown, type EventStreams } from '../http/event-streams.js';
import { answerListEvents, EVENTS_HEAD_HEADER, listEvents } from '../operations/list-events.js';
import { EVENT_STREAM_CONTENT_TYPE, streamEvents, streamStart } from '../operations/stream-events.js';
import type { RequestPipeline } from '../pipeline/pipeline.js';
import type { Events } from '../store/store.js';
import { routeOptions } from './route-options.js';

export interface EventRoutesOptions {
  pipeline: RequestPipeline;
  events: Pick<Events, 'readEvents' | 'head'>;
  streams: EventStreams;
}

/** The feed (GET /v1/events) and the live stream (GET /v1/events/stream). */
export function eventRoutes({ pipeline, events, streams }: EventRoutesOptions) {
  return async (app: FastifyInstance): Promise<void> => {
    const api = app.withTypeProvider<TypeBoxTypeProvider>();

    api.route({
      ...routeOptions(listEvents),
      handler: async (request, reply) => sendAnswer(reply, await answerListEvents(events, request)),
    });

    api.route({
      ...routeOptions(streamEvents),
      handler: async (request, reply) => {
        const start = streamStart(request);
        streams.admit();
        const head = await events.head();
        // Refused here, before any byte of the stream: its connection would be ended at once.
        if (app.connections.draining) throw shuttingDown();
        // Again: other streams may have opened, or the app closed, while the head was read. From here to
        // streams.open nothing awaits, so the count admitted is the count opened.
        streams.admit();
        const ctx = contextOf(pipeline, request);
        const own: Record<string, string> = {
          'content-type': EVENT_STREAM_CONTENT_TYPE,
          'cache-control': 'no-store',
          // Proxies that buffer answers (nginx) would hold the events back.
          'x-accel-buffering': 'no',
          [EVENTS_HEAD_HEADER]: String(head),
        };
        const headers: (string | number)[] = Object.entries(own).flat();
        pipeline.addAnswerHeaders(
          ctx,
          (name) => own[name],
          (name, value) => void headers.push(name, value),
        );
        // From here the stream writes to the socket itself; Fastify sends nothing more.
        reply.hijack();
        const stream = streams.open(reply.raw, headers, start ?? head);
        app.connections.streaming(reply.raw, () => stream.end());
        // A stream has no answer that ends by itself: its request is complete when the connection is gone.
        void stream.closed.then(() => pipeline.completed(ctx, 200));
      },
    });
  };
}
