import { Agent, request } from 'node:http';

/** One answer, or undefined when the connection failed before one came (refused, reset, the server killed). */
export interface ClientAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A client on one keep-alive connection, sending one request at a time, as a load balancer's pool would. */
export class KeepAliveClient {
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 1 });

  constructor(readonly port: number) {}

  send(method: string, path: string, headers: Record<string, string>, body?: string): Promise<ClientAnswer | undefined> {
    return new Promise((resolve) => {
      const framed = body === undefined ? headers : { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
      const req = request({ host: '127.0.0.1', port: this.port, method, path, headers: framed, agent: this.#agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
        res.on('error', () => resolve(undefined));
      });
      req.on('error', () => resolve(undefined));
      req.end(body);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}
