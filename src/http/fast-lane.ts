import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from '../errors.js';
import { parsePetId } from '../domain/pet-id.js';
import { adjustInventory } from '../operations/adjust-inventory.js';
import type { Answer } from '../operations/answer.js';
import { bodyValidator, isPlainJsonContentType, parseJsonBody } from '../operations/body.js';
import { commitReservation } from '../operations/commit-reservation.js';
import { createReservation } from '../operations/create-reservation.js';
import { getReservation } from '../operations/get-reservation.js';
import type { Operation, OperationDependencies, OperationRequest, Reply } from '../operations/handler.js';
import { listInventory } from '../operations/list-inventory.js';
import { releaseReservation } from '../operations/release-reservation.js';
import { updateInventory } from '../operations/update-inventory.js';
import type { RequestContext } from '../pipeline/context.js';
import { UNDECIDED, type RequestPipeline } from '../pipeline/pipeline.js';

export interface FastLaneOptions {
  pipeline: RequestPipeline;
  /** What the operations answer with: the same dependencies Fastify's routes are given. */
  dependencies: OperationDependencies;
  bodyLimit: number;
}

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** How many requests the lane has answered since start; the rest went to Fastify (for metrics, and tests that it is used). */
export interface FastLaneStats {
  answered: number;
}

/**
 * The operations the lane answers: the stock list, the changes of one count, and a checkout's
 * reservation writes. Each takes no query, answers in one go (no held connection) and has no body
 * limit of its own (POST /v1/inventory/batch has, so it stays Fastify's).
 */
export const LANE_OPERATIONS: readonly Operation[] = [listInventory, updateInventory, adjustInventory, createReservation, getReservation, commitReservation, releaseReservation];

/** One operation the lane serves: its declaration, and its answer from the path's parameters and the body's text. */
interface LaneOperation {
  spec: Operation;
  /** The path's parameters (raw segments) when the path is the operation's, with no query; else undefined. */
  match: (url: string) => Record<string, string> | undefined;
  /** May throw (a refused path or body) as well as reject. */
  answer: (ctx: RequestContext, params: Record<string, string>, body: string | undefined) => Reply | Promise<Reply>;
}

/**
 * The operations of LANE_OPERATIONS, answered on node:http before Fastify.
 *
 * Why: measured on one core, Fastify's request machinery (hooks, reply objects, serialisation)
 * cost several times what these operations do themselves (bench/results.md).
 *
 * The lane is the second executor of the request pipeline (src/pipeline/): it takes its paths,
 * scopes and body schema from the operations' declarations, runs the pipeline's rules in their
 * synchronous form, answers with the operations' own handlers, as Fastify's routes do, and adds the
 * same headers. It leaves to Fastify, untouched, what it does not take (another path, a query, a
 * body that is not plain JSON framed by a Content-Length within the limit, a body sent to an
 * operation that takes none); and, part-way, a request whose rules cannot all decide from memory
 * (a key not in the cache yet): Fastify then continues the same list at the rule where the lane
 * stopped. test/http/fast-lane.test.ts holds both lanes to the same bytes.
 */
export function fastLane(options: FastLaneOptions, stats: FastLaneStats, fallback: RequestHandler): RequestHandler {
  const { pipeline } = options;
  const operations = LANE_OPERATIONS.map((op) => laneOperation(op, options.dependencies));

  return (req, res) => {
    let operation: LaneOperation | undefined;
    let params: Record<string, string> | undefined;
    for (const op of operations) {
      if (op.spec.method !== req.method) continue;
      params = op.match(req.url ?? '');
      if (params) {
        operation = op;
        break;
      }
    }
    if (!operation || !params) return fallback(req, res);
    const { spec } = operation;
    if (spec.body ? !hasPlainBody(req, options.bodyLimit) : spec.method !== 'GET' && !hasNoBody(req)) return fallback(req, res);
    const ctx = pipeline.begin(req, spec.scope ?? 'public', undefined, spec.operationId);
    const refusal = pipeline.runNow(ctx);
    if (refusal === UNDECIDED) {
      pipeline.handOver(req, ctx);
      return fallback(req, res);
    }
    stats.answered++;
    if (refusal) return send(pipeline, res, ctx, pipeline.answerFor(ctx, refusal));
    const respond = (reply: Reply) => {
      try {
        if ('hold' in reply) throw new Error(`${spec.operationId} held its connection, which the fast lane does not serve`);
        send(pipeline, res, ctx, reply);
      } catch (err) {
        // The answer itself could not be written (never expected): logged as a 500, and the connection dropped.
        pipeline.failure(ctx, err);
        res.destroy();
      }
    };
    const fail = (err: unknown) => respond(pipeline.failure(ctx, err));
    const answer = (text?: string) => {
      let answered: Reply | Promise<Reply>;
      try {
        answered = operation.answer(ctx, params, text);
      } catch (err) {
        return fail(err);
      }
      if ('then' in answered) void answered.then(respond, fail);
      else respond(answered);
    };
    if (!spec.body) return void answer();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    // A small body comes in one chunk: read as it is, not copied into a new buffer first.
    const end = () => void answer((chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8'));
    // A body that does not arrive in time is an ApiError (src/http/connections.ts), answered like any failure;
    // a client that goes away mid-body has nobody to answer: Node closes the socket, the pipeline logs it (info).
    req.on('error', (err) => {
      if (!(err instanceof ApiError)) return pipeline.aborted(ctx);
      req.off('end', end);
      respond(pipeline.failure(ctx, err));
    });
    req.on('end', end);
  };
}

/**
 * An operation as the lane serves it, in the order Fastify's route checks a request: the petId
 * (before the body), then the body as JSON and against the declaration's schema (unless the
 * operation checks it itself), then the operation's own handler.
 */
function laneOperation(spec: Operation, dependencies: OperationDependencies): LaneOperation {
  const handle = spec.serve(dependencies);
  const check = spec.body && !spec.body.checkedByOperation ? bodyValidator(spec as Operation & { body: NonNullable<Operation['body']> }) : undefined;
  const hasPetId = spec.pathParams?.['petId'] !== undefined;
  const withParams = spec.pathParams !== undefined;
  return {
    spec,
    match: pathMatcher(spec.path),
    // Not async: the handler's promise is returned as it is (one promise less per request); a refused path or body throws.
    answer: (ctx, params, text) => {
      const request: OperationRequest = { headers: ctx.headers, principal: ctx.principal, requestId: ctx.requestId, query: NO_QUERY, body: undefined };
      if (withParams) request.params = params;
      if (hasPetId) request.petId = parsePetId(params['petId']!);
      if (spec.body) {
        const body = parseJsonBody(ctx.headers, text ?? '');
        request.body = check ? check(body) : body;
      }
      return handle(request);
    },
  };
}

/** The query of a request the lane takes: it takes none (a URL with a query is Fastify's). */
const NO_QUERY: Readonly<Record<string, never>> = Object.freeze({});

/** A matcher for a declared path: literal segments, and {name} for one segment without percent-escapes (those are Fastify's to decode). */
function pathMatcher(path: string): LaneOperation['match'] {
  if (!path.includes('{')) return (url) => (url === path ? NO_PARAMS : undefined);
  const names: string[] = [];
  const pattern = path.replace(/\{(\w+)\}|[^{]+/g, (part, name: string | undefined) => {
    if (name === undefined) return part.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
    names.push(name);
    return '([^/?#%]+)';
  });
  const regex = new RegExp(`^${pattern}$`);
  return (url) => {
    const found = regex.exec(url);
    if (!found) return undefined;
    const params: Record<string, string> = {};
    for (let i = 0; i < names.length; i++) params[names[i]!] = found[i + 1]!;
    return params;
  };
}

const NO_PARAMS: Record<string, string> = Object.freeze({});

/** No body, and nothing that says one comes: an operation that takes none; Fastify judges a body sent to it anyway. */
function hasNoBody(req: IncomingMessage): boolean {
  const { headers } = req;
  const length = headers['content-length'];
  return headers['content-type'] === undefined && headers['transfer-encoding'] === undefined && (length === undefined || length === '0');
}

/** A JSON body framed by a Content-Length from 1 to the limit; Fastify handles the rest (chunked, empty, too large, other types). */
function hasPlainBody(req: IncomingMessage, bodyLimit: number): boolean {
  const length = req.headers['content-length'];
  return (
    isPlainJsonContentType(req.headers['content-type']) &&
    req.headers['transfer-encoding'] === undefined &&
    length !== undefined &&
    /^[1-9]\d{0,9}$/.test(length) &&
    Number(length) <= bodyLimit
  );
}

/** Writes an answer with the pipeline's headers, as Fastify would send it, and logs its completion. */
function send(pipeline: RequestPipeline, res: ServerResponse, ctx: RequestContext, answer: Answer): void {
  // A flat [name, value, ...] list: node:http takes it as it is, without walking an object.
  const headers: (string | number)[] = [];
  const own = answer.headers;
  for (const name in own) headers.push(name, own[name]!);
  pipeline.addAnswerHeaders(
    ctx,
    (name) => own[name],
    (name, value) => {
      if (!(name in own)) return void headers.push(name, value);
      for (let i = 0; i < headers.length; i += 2) if (headers[i] === name) headers[i + 1] = value;
    },
  );
  if (answer.body !== undefined) headers.push('content-length', Buffer.byteLength(answer.body));
  res.writeHead(answer.status, headers);
  res.end(answer.body);
  pipeline.completed(ctx, answer.status);
}
