// The options naming a Redis server and queue, shared by `decode --redis` and `worker`.

import type { OptionSpec } from '../args.js';

export const REDIS_OPTIONS: OptionSpec[] = [
  {
    name: 'redis',
    kind: 'string',
    value: 'URL',
    description: 'Redis server of the queue: redis://[user:password@]host[:port][/db], rediss://… for TLS',
  },
  { name: 'queue', kind: 'string', value: 'NAME', description: 'queue name (coordinator and workers must agree)', defaultText: 'distvae' },
];
