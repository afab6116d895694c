// What the tile window explorer computes for one set of inputs, without the DOM: the request
// goes through the planner exactly as a user's would (shape plan, then overlap plan with the
// sample shape), and the answer is either the planner's refusal reasons or the plan report the
// figure is drawn from. Grids too large to schedule and draw in a page report their geometry only.

import { isDistVaeError, reason, type Reason } from '../../src/errors.js';
import { planningVae } from '../../src/families/registry.js';
import type { VaeSpec } from '../../src/families/types.js';
import { tileGrid } from '../../src/plan/grid.js';
import { gridMetrics, type GridMetrics } from '../../src/plan/metrics.js';
import { explainTileOverlapPlan, explainTileShapePlan, tileOverlapPlan, tileShapePlan, setTiling } from '../../src/plan/planner.js';
import { planReport, type PlanReport } from '../../src/plan/report.js';
import { latentShapeOf, type SampleShape } from '../../src/plan/shapes.js';

/** Above this many tiles the explorer shows the grid's metrics but does not schedule or draw it. */
export const MAX_TILES_DRAWN = 400;
export const MAX_RANKS = 256;

export interface ExplorerInput {
  family: string;
  /** Numbers as typed; a field that is empty or not a number arrives as its text. */
  height: number | string;
  width: number | string;
  frames: number | string;
  windowHeight: number | string;
  windowWidth: number | string;
  overlapHeight: number | string;
  overlapWidth: number | string;
  ranks: number | string;
}

export type ExplorerResult =
  | { kind: 'refused'; stage: 'family' | 'window' | 'overlap' | 'ranks'; reasons: Reason[] }
  | { kind: 'plan'; report: PlanReport }
  | { kind: 'too-many-tiles'; metrics: GridMetrics };

/** A field as the planner should see it: a number when the text is one, the text otherwise. */
export function fieldValue(text: string): number | string {
  return text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text;
}

/** The family's VAE with its default config, or the reasons the library refuses to make one. */
export function defaultVae(family: string): VaeSpec | Reason[] {
  try {
    return planningVae(family);
  } catch (e) {
    if (!isDistVaeError(e)) throw e;
    return e.reasons.length > 0
      ? e.reasons
      : [reason(e.code, 'family', family, 'a family whose default config the library accepts', e.message)];
  }
}

export function explore(input: ExplorerInput): ExplorerResult {
  const vae = defaultVae(input.family);
  if (Array.isArray(vae)) return { kind: 'refused', stage: 'family', reasons: vae };
  const sample = { height: input.height, width: input.width, frames: input.frames } as SampleShape;
  const ranksReasons =
    typeof input.ranks === 'number' && Number.isInteger(input.ranks) && input.ranks >= 1 && input.ranks <= MAX_RANKS
      ? []
      : [reason('RANKS_INVALID', 'ranks', input.ranks, `an integer in [1, ${MAX_RANKS}]`)];
  const shapeReasons = explainTileShapePlan(vae, input.windowHeight as number, input.windowWidth as number, { sampleShape: sample });
  if (shapeReasons.length > 0) return { kind: 'refused', stage: 'window', reasons: [...shapeReasons, ...ranksReasons] };
  setTiling(vae, tileShapePlan(vae, input.windowHeight as number, input.windowWidth as number, { sampleShape: sample })!);
  const overlapReasons = explainTileOverlapPlan(vae, input.overlapHeight as number, input.overlapWidth as number, { sampleShape: sample });
  if (overlapReasons.length > 0) return { kind: 'refused', stage: 'overlap', reasons: [...overlapReasons, ...ranksReasons] };
  if (ranksReasons.length > 0) return { kind: 'refused', stage: 'ranks', reasons: ranksReasons };
  setTiling(vae, tileOverlapPlan(vae, input.overlapHeight as number, input.overlapWidth as number, { sampleShape: sample })!);
  const grid = tileGrid(vae, latentShapeOf(vae.geometry, sample));
  if (grid.tiles.length > MAX_TILES_DRAWN) return { kind: 'too-many-tiles', metrics: gridMetrics(grid) };
  return { kind: 'plan', report: planReport(vae, sample, input.ranks as number) };
}
