// A redis-server the queue tests own: started on a free loopback port with no persistence,
// stopped (and waited for) afterwards. `redisServerPath()` is null when redis-server is not
// installed, so a test file can skip with a clear message (.ci/run installs it). `decodeLeftovers`
// lists the keys a decode left behind.

import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

export function redisServerPath(): string | null {
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

/** A port nothing listens on now (the OS picks it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  server.close();
  await once(server, 'close');
  return port;
}

export interface RedisServer {
  url: string;
  port: number;
  /** A client for inspecting the server (KEYS, FLUSHALL); closed by stop(). */
  client: Redis;
  stop(): Promise<void>;
}

export async function startRedisServer(options: { password?: string } = {}): Promise<RedisServer> {
  const path = redisServerPath();
  if (!path) throw new Error('redis-server is not installed (apt-get install redis-server)');
  const port = await freePort();
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    ...(options.password ? ['--requirepass', options.password] : []),
  ];
  const child: ChildProcess = spawn(path, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let log = '';
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  for (let i = 0; i < 100 && !/Ready to accept connections/.test(log); i++) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}: ${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const client = new Redis({ host: '127.0.0.1', port, ...(options.password ? { password: options.password } : {}), lazyConnect: true });
  await client.connect();
  const auth = options.password ? `:${encodeURIComponent(options.password)}@` : '';
  return {
    url: `redis://${auth}127.0.0.1:${port}`,
    port,
    client,
    async stop() {
      client.disconnect();
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    },
  };
}

/** BullMQ's queue-level bookkeeping, which outlives every decode by design (its events stream is capped). */
const QUEUE_BOOKKEEPING = /^bull:[\w.-]+:(meta|events|id|stalled-check|marker)$/;

/** Keys in Redis that are not BullMQ's queue-level bookkeeping: a decode (or its jobs) left them behind. */
export async function decodeLeftovers(client: Redis): Promise<string[]> {
  return (await client.keys('*')).filter((k) => !QUEUE_BOOKKEEPING.test(k)).sort();
}
