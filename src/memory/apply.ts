// Between memory plans and a VAE's tiling: the tiling request that carries out a plan (installed
// with the planner's setTiling, so a choice is refused exactly as a request would be), and the
// plan a VAE's installed tiling and strategy amount to (for predicting an exact request).

import type { VaeSpec } from '../families/types.js';
import type { TilingRequest } from '../plan/planner.js';
import type { SampleShape } from '../plan/shapes.js';
import type { MemoryPlan, MemoryStrategy } from './model.js';

/**
 * The tiling that carries out `plan`, for `setTiling`: the whole decode and row sharding (which
 * ignores any tiling) are `'off'`; tiles are their window and overlap for `sample`, refused by
 * the planner exactly as a request would be.
 */
export function tilingOfPlan(plan: MemoryPlan, sample: SampleShape): TilingRequest | 'off' {
  if (plan.strategy === 'whole' || plan.strategy === 'shard') return 'off';
  return { window: plan.window!, overlap: plan.overlap ?? { height: 0, width: 0 }, sampleShape: sample };
}

/** The memory plan of a VAE's installed tiling under a decode strategy (`tile` with tiling off is the whole decode). */
export function planOfTiling(vae: VaeSpec, strategy: 'tile' | 'shard' | 'exact-tile', ranks: number): MemoryPlan {
  if (strategy === 'shard') return { strategy, ranks };
  const kind: MemoryStrategy = strategy === 'tile' && !vae.tiling.enabled ? 'whole' : strategy;
  if (kind === 'whole') return { strategy: 'whole', ranks, frames: vae.tiling.frames };
  return { strategy: kind, ranks, window: { ...vae.tiling.window }, overlap: { ...vae.tiling.overlap }, frames: vae.tiling.frames };
}
