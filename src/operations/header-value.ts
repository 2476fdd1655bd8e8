import type { IncomingHttpHeaders } from 'node:http';

/** A request header as one string (repeated fields joined with ", ", RFC 9110 5.3), or undefined when absent. */
export function headerValue(request: { headers: IncomingHttpHeaders }, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}
