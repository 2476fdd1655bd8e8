import { backlogOf, type WebhookEndpoint } from '../domain/webhook.js';
import { WebhookEndpointSchema, WebhookListSchema, type WebhookEndpointBody, type WebhookListBody } from '../schemas/webhook.js';
import type { Events, WebhookEndpoints } from '../store/store.js';
import { jsonAnswer, type Answer } from './answer.js';
import { operation } from './handler.js';
import { NoQuery } from './operation.js';
import { WEBHOOKS_TAG } from './tags.js';

export const listWebhooks = operation({
  operationId: 'listWebhooks',
  method: 'GET',
  path: '/v1/webhooks',
  summary: 'Webhook endpoints and their delivery state',
  description:
    'Every webhook endpoint, oldest first: its URL, whether it is enabled (or why not), the seq delivered up to, the backlog, ' +
    'and the last failure. Read-only: endpoints are added, changed and removed with the CLI (`webhooks`). Never a signing secret.',
  tags: [WEBHOOKS_TAG],
  scope: 'webhooks:manage',
  querystring: NoQuery,
  responses: {
    200: { description: 'Every endpoint and the event log\'s head', schema: WebhookListSchema },
  },
  extensions: { 'x-extension': true },
  components: { WebhookEndpoint: WebhookEndpointSchema, WebhookList: WebhookListSchema },
}, ({ store }) => () => answerListWebhooks(store));

/** An endpoint as the API and `webhooks list --json` show it: field by field, so a secret never slips in. */
export function webhookEndpointBody(endpoint: WebhookEndpoint, head: number): WebhookEndpointBody {
  return {
    id: endpoint.id,
    url: endpoint.url,
    description: endpoint.description,
    enabled: endpoint.enabled,
    disabledReason: endpoint.disabledReason,
    deliveredSeq: endpoint.deliveredSeq,
    // A reset past pruned events may leave deliveredSeq at a head read a moment later than ours.
    backlog: backlogOf(head, endpoint),
    maxInFlight: endpoint.maxInFlight,
    failures: endpoint.failures,
    retrying: endpoint.retrying.length,
    nextAttemptAt: endpoint.nextAttemptAt?.toISOString() ?? null,
    lastFailureAt: endpoint.lastFailureAt?.toISOString() ?? null,
    lastFailure: endpoint.lastFailure,
    createdAt: endpoint.createdAt.toISOString(),
  };
}

/** What the list of endpoints reads: the endpoints, and the event log's head. */
export interface WebhookListSource {
  /** Where the endpoints are listed. */
  webhookEndpoints: Pick<WebhookEndpoints, 'listEndpoints'>;
  /** Where the head is read, for each endpoint's backlog. */
  events: Pick<Events, 'head'>;
}

/** Every endpoint, then the head: read in that order, the head is never behind an endpoint's deliveredSeq. */
export async function webhookList(store: WebhookListSource): Promise<WebhookListBody> {
  const endpoints = await store.webhookEndpoints.listEndpoints();
  const head = await store.events.head();
  return { items: endpoints.map((e) => webhookEndpointBody(e, head)), head };
}

/** GET /v1/webhooks: every endpoint's state, never its secrets. */
export async function answerListWebhooks(store: WebhookListSource): Promise<Answer> {
  return jsonAnswer(200, JSON.stringify(await webhookList(store)));
}
