import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { checkPortsFree, explainListenError, isPortInUse, PortInUseError } from '../src/port-in-use.js';

test('a failed listen: EADDRINUSE becomes one line naming the port and how to choose another; any other error stays as it is', () => {
  const inUse = Object.assign(new Error('listen EADDRINUSE: address already in use 0.0.0.0:8080'), { code: 'EADDRINUSE' });
  const explained = explainListenError(inUse, 8080, 'PORT');
  assert.ok(explained instanceof PortInUseError);
  assert.equal(explained.message, 'port 8080 is already in use; choose another: PORT=8081 npm start (or serve --port 8081)');
  assert.equal((explainListenError(inUse, 9090, 'METRICS_PORT') as Error).message, 'metrics port 9090 is already in use; choose another: METRICS_PORT=9091');
  assert.equal((explainListenError(inUse, 65535, 'PORT') as Error).message, 'port 65535 is already in use; choose another: PORT=65534 npm start (or serve --port 65534)');
  const other = Object.assign(new Error('listen EACCES'), { code: 'EACCES' });
  assert.equal(explainListenError(other, 80, 'PORT'), other);
});

test('checkPortsFree: a port another process holds is refused before anything starts, PORT first; free ports and port 0 pass', async (t) => {
  const taken = createServer();
  await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
  t.after(() => taken.close());
  const port = (taken.address() as AddressInfo).port;
  assert.equal(await isPortInUse(port, '127.0.0.1'), true);
  const free = { port: 0, host: '127.0.0.1', metricsPort: undefined, metricsHost: '127.0.0.1' };
  await checkPortsFree(free);
  await assert.rejects(checkPortsFree({ ...free, port }), { name: 'PortInUseError', message: new RegExp(`^port ${port} `) });
  await assert.rejects(checkPortsFree({ ...free, metricsPort: port }), { name: 'PortInUseError', message: new RegExp(`^metrics port ${port} `) });
  await checkPortsFree({ ...free, metricsPort: 0 });
  taken.close();
  await new Promise((done) => taken.once('close', done));
  assert.equal(await isPortInUse(port, '127.0.0.1'), false, 'free once its holder closed it');
});
