import { createRequire } from 'node:module';
import type proxyAddr from '@fastify/proxy-addr';
import { ConfigError } from './error.js';
import type { SettingValue } from './setting.js';
import { integer } from './values.js';

/**
 * TRUST_PROXY: false, a hop count, or proxy addresses/CIDRs (and proxy-addr's names loopback,
 * linklocal, uniquelocal). Trusting every hop is refused: X-Forwarded-For would be the client's to
 * write, so rotating it escapes the failed-authentication throttle and names any address to lock out.
 */
export function trustProxy(): SettingValue<false | number | string> {
  const hops = integer({ default: 0, min: 0, max: 100 });
  const accepts = 'false, a hop count, or comma-separated proxy addresses or CIDRs';
  return {
    default: false,
    accepts,
    bounds: hops.bounds,
    parse(name, text) {
      if (text === 'false') return false;
      if (/^\d+$/.test(text)) return hops.parse(name, text);
      const entries = text.split(',').map((s) => s.trim());
      if (text.toLowerCase() === 'true' || entries.some((e) => /\/0+$/.test(e))) {
        throw new ConfigError(
          `${name}=${text} would trust every hop: any client could write its own X-Forwarded-For, escape the ` +
            'failed-authentication throttle by rotating it and lock out an address of its choosing. Set the number of ' +
            'proxies in front of the service (such as 1), or their addresses or CIDRs (such as 10.0.0.0/8).',
        );
      }
      try {
        loadProxyAddr().compile(entries);
      } catch (err) {
        throw new ConfigError(`${name} must be ${accepts}: ${(err as Error).message}`);
      }
      return text;
    },
  };
}

/** proxy-addr, loaded only to check an address list: every command reads the settings, and most never need its three modules. */
function loadProxyAddr(): typeof proxyAddr {
  return createRequire(import.meta.url)('@fastify/proxy-addr') as typeof proxyAddr;
}
