import { parseDatabaseUrl } from '../store/open.js';
import { postgresUrlProblem } from '../store/postgres/url.js';
import { ConfigError } from './error.js';
import type { SettingValue } from './setting.js';

/** An absolute http(s) URL ending in /v1 (an OpenAPI `servers` entry); unset, none. */
export function baseUrl(): SettingValue<string | undefined> {
  const accepts = 'an absolute http(s) URL ending in /v1';
  return {
    default: undefined,
    accepts,
    parse(name, text) {
      const url = URL.canParse(text) ? new URL(text) : undefined;
      if (!url || !/^https?:$/.test(url.protocol) || !url.pathname.endsWith('/v1') || url.search || url.hash) {
        throw new ConfigError(`${name} must be ${accepts}, got "${text}"`);
      }
      return text;
    },
  };
}

/** Where the store is: the store's own parser says what it accepts, and its message never echoes a password. */
export function databaseUrl(spec: { default: string }): SettingValue<string> {
  return {
    default: spec.default,
    accepts: 'sqlite:PATH, sqlite::memory: or postgres://USER:PASSWORD@HOST:PORT/DB[?schema=NAME]',
    parse(_name, text) {
      try {
        parseDatabaseUrl(text);
      } catch (err) {
        throw new ConfigError((err as Error).message);
      }
      return text;
    },
  };
}

/** A PostgreSQL URL, reached without a pooler; unset, none. */
export function directDatabaseUrl(): SettingValue<string | undefined> {
  const accepts = 'postgres://USER:PASSWORD@HOST:PORT/DB';
  return {
    default: undefined,
    accepts,
    parse(name, text) {
      // Never echo the value: it may hold a password.
      if (!/^postgres(ql)?:\/\//.test(text)) throw new ConfigError(`${name} must be ${accepts}`);
      const problem = postgresUrlProblem(text);
      if (problem !== undefined) throw new ConfigError(`${name} ${problem}`);
      return text;
    },
  };
}

/** A redis:// or rediss:// URL with a host; unset, none. */
export function redisUrl(): SettingValue<string | undefined> {
  const accepts = 'redis://[USER:PASSWORD@]HOST[:PORT][/DB] or rediss://...';
  return {
    default: undefined,
    accepts,
    parse(name, text) {
      const url = URL.canParse(text) ? new URL(text) : undefined;
      // Never echo the value: it may hold a password.
      if (!url || !/^rediss?:$/.test(url.protocol) || !url.hostname) throw new ConfigError(`${name} must be ${accepts}`);
      return text;
    },
  };
}

/** A nats://, tls:// or ws(s):// URL with a host, or several comma-separated (a cluster's seeds); unset, none. */
export function natsUrl(): SettingValue<string | undefined> {
  const accepts = 'nats://[USER:PASSWORD@]HOST[:PORT] or tls://..., several comma-separated';
  return {
    default: undefined,
    accepts,
    parse(name, text) {
      for (const part of text.split(',')) {
        const url = URL.canParse(part.trim()) ? new URL(part.trim()) : undefined;
        // Never echo the value: it may hold a password.
        if (!url || !/^(nats|tls):$/.test(url.protocol) || !url.hostname) throw new ConfigError(`${name} must be ${accepts}`);
      }
      return text;
    },
  };
}

/** A comma-separated list of exact origins, each as a browser sends it in Origin: scheme, host and port only; unset, none. */
export function origins(): SettingValue<readonly string[]> {
  const accepts = 'a comma-separated list of origins such as https://shop.example or http://localhost:3000 (no path, no trailing slash)';
  return {
    default: [],
    accepts,
    parse(name, text) {
      return text.split(',').map((part) => {
        const origin = part.trim();
        const parsed = URL.canParse(origin) ? new URL(origin) : undefined;
        // `*` is refused: the list is what this service trusts, named one by one.
        if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) throw new ConfigError(`${name} must be ${accepts}, got "${origin}"`);
        return origin;
      });
    },
  };
}
