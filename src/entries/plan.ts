// `distvae/plan`: the planner contract one step at a time and the geometry under it — exact
// window, overlap and frame plans with the reasons a request is refused (install a plan with the
// root's `setTiling`), sample / latent shapes, tile grids, metrics, the scheduler, the plan report's
// parts, plan search, resolution buckets and equivalence with diffusers. Pure: runs in a browser.

export {
  explainTileFramePlan,
  explainTileOverlapPlan,
  explainTileShapePlan,
  tileFramePlan,
  tileOverlapPlan,
  tileShapePlan,
  type PlanOptions,
  type TileFramePlan,
  type TileOverlapPlan,
  type TilePlan,
  type TileShapePlan,
} from '../plan/planner.js';
export { latentShapeOf, sampleShapeOf, sampleShapeReasons, type LatentShape } from '../plan/shapes.js';
export { tileArea, tileGrid, type Span, type Tile, type TileGrid } from '../plan/grid.js';
export { gridMetrics, scheduleGrid, tileWork, type GridMetrics } from '../plan/metrics.js';
export { scheduleTiles, type Schedule } from '../plan/scheduler.js';
export type { RankReport } from '../plan/report.js';
export { MIN_NARROW_AXIS_LATENT, type SearchCandidate, type SearchOptions } from '../plan/search.js';
export { BUCKET_POLICIES, chooseBucket, parseBuckets, type BucketChoice, type BucketPolicy, type Box } from '../plan/buckets.js';
export { diffusersDifference, diffusersEquivalent } from '../plan/equivalence.js';
