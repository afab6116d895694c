// Between memory plans and a VAE's tiling: install a chosen plan (validated by the planner, so a
// choice is refused exactly as a request would be), and read the plan a VAE's installed tiling
// and strategy amount to (for predicting an exact request).

import { DistVaeError } from '../errors.js';
import type { VaeSpec } from '../families/types.js';
import { applyTilePlan, explainTileOverlapPlan, explainTileShapePlan, tileOverlapPlan, tileShapePlan } from '../plan/planner.js';
import type { SampleShape } from '../plan/shapes.js';
import type { MemoryPlan, MemoryStrategy } from './model.js';

/** Installs `plan`'s tiling on `vae`: whole turns spatial and temporal tiling off; tiles install their window and overlap. */
export function applyMemoryPlan(vae: VaeSpec, plan: MemoryPlan, sample: SampleShape): void {
  if (plan.strategy === 'whole') {
    vae.tiling = { ...vae.tiling, enabled: false, planned: true, frames: vae.tiling.frames ? { ...vae.tiling.frames, enabled: false } : null };
    return;
  }
  if (plan.strategy === 'shard') return;
  const options = { sampleShape: sample };
  const shape = tileShapePlan(vae, plan.window!.height, plan.window!.width, options);
  if (!shape) throw new DistVaeError('PLAN_REFUSED', 'the chosen window is refused', { reasons: explainTileShapePlan(vae, plan.window!.height, plan.window!.width, options) });
  applyTilePlan(vae, shape);
  const o = plan.overlap ?? { height: 0, width: 0 };
  const overlap = tileOverlapPlan(vae, o.height, o.width, options);
  if (!overlap) throw new DistVaeError('PLAN_REFUSED', 'the chosen overlap is refused', { reasons: explainTileOverlapPlan(vae, o.height, o.width, options) });
  applyTilePlan(vae, overlap);
}

/** The memory plan of a VAE's installed tiling under a decode strategy (`tile` with tiling off is the whole decode). */
export function planOfTiling(vae: VaeSpec, strategy: 'tile' | 'shard' | 'exact-tile', ranks: number): MemoryPlan {
  if (strategy === 'shard') return { strategy, ranks };
  const kind: MemoryStrategy = strategy === 'tile' && !vae.tiling.enabled ? 'whole' : strategy;
  if (kind === 'whole') return { strategy: 'whole', ranks, frames: vae.tiling.frames };
  return { strategy: kind, ranks, window: { ...vae.tiling.window }, overlap: { ...vae.tiling.overlap }, frames: vae.tiling.frames };
}
