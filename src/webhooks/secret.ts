import { randomBytes } from 'node:crypto';

/** A new signing secret: `whsec_` + base64 of 32 random bytes, the Standard Webhooks form receivers' libraries accept. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** A new endpoint id: `whk_` + base64url of 16 random bytes (url-safe, so it can sit in a CLI argument or a path). */
export function newEndpointId(): string {
  return `whk_${randomBytes(16).toString('base64url')}`;
}
