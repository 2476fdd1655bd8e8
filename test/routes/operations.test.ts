import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OPERATIONS } from '../../src/operations/index.js';
import { routerPath } from '../../src/routes/operations.js';
import { buildTestApp } from '../support/app.js';

test('every operation of the list is a route of the app, at the method and path its declaration gives', async (t) => {
  const api = await buildTestApp(t);
  for (const op of OPERATIONS) assert.ok(api.app.hasRoute({ method: op.method, url: routerPath(op.path) }), `${op.operationId}: ${op.method} ${op.path}`);
});

test('a declared path becomes Fastify\'s: each {parameter} a :parameter', () => {
  assert.equal(routerPath('/v1/inventory'), '/v1/inventory');
  assert.equal(routerPath('/v1/inventory/{petId}/adjustments'), '/v1/inventory/:petId/adjustments');
});
