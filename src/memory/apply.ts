// Between memory plans and a VAE's tiling: install a chosen plan (validated by the planner, so a
// choice is refused exactly as a request would be), and read the plan a VAE's installed tiling
// and strategy amount to (for predicting an exact request).

import type { VaeSpec } from '../families/types.js';
import { disableTiling, setTiling } from '../plan/planner.js';
import type { SampleShape } from '../plan/shapes.js';
import type { MemoryPlan, MemoryStrategy } from './model.js';

/** Installs `plan`'s tiling on `vae` through the planner: whole turns spatial and temporal tiling off; tiles install their window and overlap (refused exactly as a request would be). */
export function applyMemoryPlan(vae: VaeSpec, plan: MemoryPlan, sample: SampleShape): void {
  if (plan.strategy === 'whole') return disableTiling(vae);
  if (plan.strategy === 'shard') return;
  setTiling(vae, { window: plan.window!, overlap: plan.overlap ?? { height: 0, width: 0 }, sampleShape: sample });
}

/** The memory plan of a VAE's installed tiling under a decode strategy (`tile` with tiling off is the whole decode). */
export function planOfTiling(vae: VaeSpec, strategy: 'tile' | 'shard' | 'exact-tile', ranks: number): MemoryPlan {
  if (strategy === 'shard') return { strategy, ranks };
  const kind: MemoryStrategy = strategy === 'tile' && !vae.tiling.enabled ? 'whole' : strategy;
  if (kind === 'whole') return { strategy: 'whole', ranks, frames: vae.tiling.frames };
  return { strategy: kind, ranks, window: { ...vae.tiling.window }, overlap: { ...vae.tiling.overlap }, frames: vae.tiling.frames };
}
