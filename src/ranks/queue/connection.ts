// Redis connections of the queue transport: a `redis://` / `rediss://` URL (or ioredis options)
// becomes explicit ioredis options — TLS for `rediss://`, user name and password for ACLs, the
// database number — and a first connection is made with a short timeout and no retries, so an
// unreachable or refusing server is a clear error before any work starts.

import { Redis, type RedisOptions } from 'ioredis';
import { DistVaeError, reason, refuse } from '../../errors.js';

/** A Redis URL (`redis://[user:password@]host[:port][/db]`, `rediss://` for TLS) or ioredis options. */
export type RedisConnection = string | RedisOptions;

/** Connect timeout of the first connection (ms) when none is given. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

/** ioredis options for `connection`; a URL is parsed here so a malformed one is refused with a reason. */
export function redisOptionsOf(connection: RedisConnection): RedisOptions {
  if (typeof connection !== 'string') return { ...connection };
  let url: URL;
  try {
    url = new URL(connection);
  } catch {
    return refuseUrl(connection, 'not a URL');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
    return refuseUrl(connection, `the scheme is ${url.protocol.replace(/:$/, '')}`);
  if (url.hostname === '') return refuseUrl(connection, 'it names no host');
  const port = url.port === '' ? 6379 : Number(url.port);
  const path = url.pathname.replace(/^\//, '');
  if (path !== '' && !/^\d+$/.test(path)) return refuseUrl(connection, `the path "/${path}" is not a database number`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return {
    host,
    port,
    ...(url.username !== '' ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password !== '' ? { password: decodeURIComponent(url.password) } : {}),
    ...(path !== '' ? { db: Number(path) } : {}),
    // The certificate is checked against the host name (Node's defaults: system CAs, verification on).
    ...(url.protocol === 'rediss:' ? { tls: { servername: host } } : {}),
  };
}

function refuseUrl(value: string, why: string): never {
  refuse(
    'INVALID_ARGUMENT',
    reason(
      'REDIS_URL_INVALID',
      'redis',
      redacted(value),
      'redis://[user:password@]host[:port][/db] or rediss://… for TLS',
      `Redis URL ${redacted(value)} is invalid: ${why}`,
    ),
  );
}

/** The URL without its password, for messages. */
export function redacted(url: string): string {
  return url.replace(/(\/\/[^:/@]*:)[^@/]*@/, '$1***@');
}

/** `host:port` of the options, for messages. */
export function describeServer(options: RedisOptions): string {
  return `${options.tls ? 'rediss' : 'redis'}://${options.host ?? 'localhost'}:${options.port ?? 6379}${options.db ? `/${options.db}` : ''}`;
}

/**
 * A connected client: one attempt within `connectTimeoutMs`, refused with TRANSPORT_FAILED naming
 * the server and the cause (refused, timed out, authentication). Later reconnects are bounded too,
 * so a server lost mid-decode fails commands instead of queueing them forever.
 */
export async function connectRedis(options: RedisOptions, connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS): Promise<Redis> {
  let connectedOnce = false;
  const client = new Redis({
    ...options,
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    maxRetriesPerRequest: 2,
    // No retry before the first success (fail fast); a few short ones after a lost connection.
    retryStrategy: (times) => (!connectedOnce || times > 5 ? null : Math.min(times * 200, 1000)),
  });
  let lastError: Error | null = null;
  // Errors after connecting surface through failing commands; the listener keeps them from crashing the process.
  client.on('error', (e: Error) => (lastError = e));
  try {
    await client.connect();
    await client.ping();
    connectedOnce = true;
    return client;
  } catch (e) {
    client.disconnect();
    const cause = lastError ?? (e as Error);
    throw new DistVaeError(
      'TRANSPORT_FAILED',
      `cannot reach Redis at ${describeServer(options)}: ${cause.message || String(cause)} (is redis-server running and reachable, and are the password and TLS settings right?)`,
      { cause },
    );
  }
}
