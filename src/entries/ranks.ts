// `distvae/ranks`: rank groups in detail — isolations, the queue's connection and defaults, what a
// rank reports and sends, the shard plan's bands and collectives, halo-exact tiling's halo, and the
// WebGPU adapters ranks are mapped to.

export { ISOLATIONS } from '../ranks/local/index.js';
export type { Isolation, LocalGroup } from '../ranks/local/local-group.js';
export type { QueueGroup, QueueTraffic } from '../ranks/queue/queue-group.js';
export type { QueueWorker } from '../ranks/queue/queue-worker.js';
export { redacted, redisOptionsOf, type RedisConnection } from '../ranks/queue/connection.js';
export { DEFAULT_QUEUE } from '../ranks/queue/protocol.js';
export type { RankFailure, TileJobResult } from '../ranks/group.js';
export type { CommCounters } from '../ranks/program.js';
export type { ShardRankSummary, UseStrategyOptions } from '../strategies/index.js';
export { splitBands, type Band } from '../strategies/shard/bands.js';
export { predictCollectives, shardPlan, type ShardPlan } from '../strategies/shard/plan.js';
export { exactTilingHalo, type Halo } from '../strategies/exact-tile/halo.js';
export { checkAdapters, listAdapters, type AdapterListing, type GpuAdapter } from '../runtime/devices.js';
