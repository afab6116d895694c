// The planner contract (docs/design.md §4): validate an exact window / overlap request against a VAE
// and return a plan or null — never a rounded one — with siblings that say why a request was
// refused; and `setTiling`, the one writer of a VAE's tiling: a request (exact sizes or the
// family's default, refused with every reason), a validated plan, or off. `installTiling` copies
// a state between two VAEs of one config (a rank's copy). Nothing outside this module writes
// `vae.tiling`.

import { DistVaeError, reason, type Reason, refuse } from '../errors.js';
import type { Size2, TilingState, VaeSpec } from '../families/types.js';
import { isPositiveInteger, latentShapeOf, sampleShapeReasons, type SampleShape } from './shapes.js';

/** A validated window (with its default overlap), to install with `setTiling`. */
export interface TileShapePlan {
  readonly kind: 'shape';
  readonly family: string;
  /** Window in output pixels. */
  readonly window: Size2;
  /** Default overlap kept with this window: floor(window_lat / 4) latent units on tiled axes, 0 on untiled ones. */
  readonly overlap: Size2;
}

/** A validated overlap for the window it was checked against, to install with `setTiling`. */
export interface TileOverlapPlan {
  readonly kind: 'overlap';
  readonly family: string;
  /** The window this overlap was validated against (must still be installed when applied). */
  readonly window: Size2;
  readonly overlap: Size2;
}

/** A validated temporal window and overlap (or temporal tiling off), to install with `setTiling`. */
export interface TileFramePlan {
  readonly kind: 'frames';
  readonly family: string;
  /** null turns temporal tiling off. */
  readonly frames: { window: number; overlap: number } | null;
}

/** Any validated plan `setTiling` installs. */
export type TilePlan = TileShapePlan | TileOverlapPlan | TileFramePlan;

/** What a plan is validated for beyond the VAE itself. */
export interface PlanOptions {
  /** The output size the plan is for; axes it leaves untiled must have overlap 0. */
  sampleShape?: SampleShape;
}

const AXES = ['height', 'width'] as const;

/** What a family without temporal tiling does with time, in a refusal's words. */
const TIME_AXIS: Record<VaeSpec['family']['temporal']['kind'], string> = {
  none: 'absent',
  'frame-steps': 'stepped frame by frame inside each tile',
  'all-frames': 'decoded whole by every tile, as diffusers does',
  'temporal-chunks': 'chunked',
  'clip-chunks': 'decoded in fixed clips inside each tile, as the class does',
};

/** A window or overlap side that is not a whole number of latent units: the same words for both. */
function notWholeLatent(code: 'WINDOW_NOT_WHOLE_LATENT' | 'OVERLAP_NOT_WHOLE_LATENT', vae: VaeSpec, field: string, v: number): Reason {
  const r = vae.geometry.spatialRatio;
  const message = `${field} = ${v} px is not a whole number of latent units for ${vae.family.name} (${r} px per latent unit)`;
  return reason(code, field, v, `a multiple of ${r} px`, message);
}

/** Reasons the window request is refused (empty when `tileShapePlan` would return a plan). */
export function explainTileShapePlan(vae: VaeSpec, heightPx: number, widthPx: number, options: PlanOptions = {}): Reason[] {
  const r = vae.geometry.spatialRatio;
  const min = vae.family.minWindowLatent;
  const reasons: Reason[] = [];
  const window = { height: heightPx, width: widthPx };
  for (const axis of AXES) {
    const v = window[axis];
    const field = `window.${axis}`;
    if (!isPositiveInteger(v)) {
      reasons.push(reason('WINDOW_INVALID', field, v, `a positive multiple of ${r} px`));
    } else if (v % r !== 0) {
      reasons.push(notWholeLatent('WINDOW_NOT_WHOLE_LATENT', vae, field, v));
    } else if (v / r < min) {
      reasons.push(
        reason(
          'WINDOW_TOO_SMALL',
          field,
          v,
          `at least ${min * r} px (${min} latent units)`,
          `${field} = ${v} px is below the ${vae.family.name} decoder's minimum of ${min * r} px`,
        ),
      );
    }
  }
  if (reasons.length === 0 && vae.family.extraWindowReasons) reasons.push(...vae.family.extraWindowReasons(vae.config, window));
  if (options.sampleShape) reasons.push(...sampleShapeReasons(vae.geometry, options.sampleShape));
  return reasons;
}

/** Validates an exact window in output pixels; null when refused (see `explainTileShapePlan`). */
export function tileShapePlan(vae: VaeSpec, heightPx: number, widthPx: number, options: PlanOptions = {}): TileShapePlan | null {
  if (explainTileShapePlan(vae, heightPx, widthPx, options).length > 0) return null;
  const r = vae.geometry.spatialRatio;
  const window = { height: heightPx, width: widthPx };
  const untiled = untiledAxes(vae, window, options.sampleShape);
  const overlap = {
    height: untiled.height ? 0 : Math.floor(heightPx / r / 4) * r,
    width: untiled.width ? 0 : Math.floor(widthPx / r / 4) * r,
  };
  return { kind: 'shape', family: vae.family.name, window, overlap };
}

/** Reasons the overlap request is refused against the window now installed on the VAE. */
export function explainTileOverlapPlan(vae: VaeSpec, overlapH: number, overlapW: number, options: PlanOptions = {}): Reason[] {
  const r = vae.geometry.spatialRatio;
  const p = vae.geometry.patchSize;
  const window = vae.tiling.window;
  const overlap = { height: overlapH, width: overlapW };
  const reasons: Reason[] = [];
  const sampleReasons = options.sampleShape ? sampleShapeReasons(vae.geometry, options.sampleShape) : [];
  const untiled =
    options.sampleShape && sampleReasons.length === 0 ? untiledAxes(vae, window, options.sampleShape) : { height: false, width: false };
  for (const axis of AXES) {
    const v = overlap[axis];
    const field = `overlap.${axis}`;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
      reasons.push(reason('OVERLAP_INVALID', field, v, `an integer number of pixels in [0, ${window[axis] - r}], a multiple of ${r}`));
    } else if (v % r !== 0 || v % p !== 0) {
      reasons.push(notWholeLatent('OVERLAP_NOT_WHOLE_LATENT', vae, field, v));
    } else if (v >= window[axis]) {
      reasons.push(
        reason(
          'OVERLAP_NOT_BELOW_WINDOW',
          field,
          v,
          `at most ${window[axis] - r} px (below the ${window[axis]} px window)`,
          `${field} = ${v} px must be smaller than the window (${window[axis]} px): at most ${window[axis] - r} px`,
        ),
      );
    } else if (v === 0 && !untiled[axis] && vae.family.diffusersTiling === 'tile-and-min-overlap') {
      // The class crops each tile's trailing overlap as `tile[..., :-overlap]`: a seam left at 0 crops the tile away.
      reasons.push(
        reason(
          'OVERLAP_INVALID',
          field,
          v,
          `a minimum overlap of at least ${r} px on an axis that tiles`,
          `${field} = 0 px: ${vae.family.name}'s own loop crops every tile's trailing overlap as tile[..., :-overlap], so a seam of 0 px would crop the tile to nothing in diffusers (and enable_tiling turns 0 into its default); ask for at least ${r} px`,
        ),
      );
    } else if (untiled[axis] && v !== 0) {
      reasons.push(
        reason(
          'OVERLAP_ON_UNTILED_AXIS',
          field,
          v,
          '0 (the sample fits in one window on this axis)',
          `${field} = ${v} px but the ${axis} of the sample (${options.sampleShape?.[axis]} px) fits in one ${window[axis]} px window, so this axis is untiled and must have overlap 0`,
        ),
      );
    }
  }
  reasons.push(...sampleReasons);
  return reasons;
}

/** Validates an exact overlap (output pixels) for the installed window; null when refused. */
export function tileOverlapPlan(vae: VaeSpec, overlapH: number, overlapW: number, options: PlanOptions = {}): TileOverlapPlan | null {
  if (explainTileOverlapPlan(vae, overlapH, overlapW, options).length > 0) return null;
  return { kind: 'overlap', family: vae.family.name, window: { ...vae.tiling.window }, overlap: { height: overlapH, width: overlapW } };
}

/** Reasons a temporal tiling request (output frames) is refused. */
export function explainTileFramePlan(vae: VaeSpec, windowFrames: number, overlapFrames: number): Reason[] {
  const rt = vae.geometry.temporalRatio;
  if (vae.family.temporal.kind !== 'temporal-chunks') {
    return [
      reason(
        'NO_TEMPORAL_TILING',
        'frames.window',
        windowFrames,
        'no temporal tiling for this family',
        `${vae.family.name} has no temporal tiling (its time axis is ${TIME_AXIS[vae.family.temporal.kind]})`,
      ),
    ];
  }
  const reasons: Reason[] = [];
  if (!isPositiveInteger(windowFrames) || windowFrames % rt !== 0) {
    reasons.push(reason('FRAME_WINDOW_INVALID', 'frames.window', windowFrames, `a positive multiple of ${rt} frames`));
  }
  if (typeof overlapFrames !== 'number' || !Number.isInteger(overlapFrames) || overlapFrames < 0 || overlapFrames % rt !== 0) {
    reasons.push(reason('FRAME_OVERLAP_INVALID', 'frames.overlap', overlapFrames, `a non-negative multiple of ${rt} frames`));
  } else if (isPositiveInteger(windowFrames) && overlapFrames >= windowFrames) {
    reasons.push(reason('FRAME_OVERLAP_NOT_BELOW_WINDOW', 'frames.overlap', overlapFrames, `below the ${windowFrames}-frame window`));
  }
  return reasons;
}

/** Validates temporal tiling (output frames); `null` frames turn it off. */
export function tileFramePlan(vae: VaeSpec, frames: { window: number; overlap: number } | null): TileFramePlan | null {
  if (frames === null)
    return vae.family.temporal.kind === 'temporal-chunks' ? { kind: 'frames', family: vae.family.name, frames: null } : null;
  if (explainTileFramePlan(vae, frames.window, frames.overlap).length > 0) return null;
  return { kind: 'frames', family: vae.family.name, frames: { ...frames } };
}

/** Installs a plan on the VAE: tiling is enabled and the window / overlap / frames set exactly. */
function applyTilePlan(vae: VaeSpec, plan: TilePlan): void {
  if (plan.family !== vae.family.name) {
    throw new DistVaeError('PLAN_REFUSED', `a ${plan.family} plan cannot be applied to a ${vae.family.name} VAE`, {
      reasons: [reason('PLAN_FAMILY_MISMATCH', 'plan.family', plan.family, vae.family.name)],
    });
  }
  switch (plan.kind) {
    case 'shape':
      refuseUnfit(plan, explainTileShapePlan(vae, plan.window.height, plan.window.width));
      vae.tiling = { ...vae.tiling, enabled: true, window: { ...plan.window }, overlap: { ...plan.overlap } };
      return;
    case 'overlap':
      if (plan.window.height !== vae.tiling.window.height || plan.window.width !== vae.tiling.window.width) {
        refuse(
          'PLAN_REFUSED',
          reason(
            'PLAN_WINDOW_CHANGED',
            'plan.window',
            plan.window,
            `${vae.tiling.window.height}x${vae.tiling.window.width}`,
            `this overlap plan was validated for a ${plan.window.height}x${plan.window.width} window but the VAE now has ${vae.tiling.window.height}x${vae.tiling.window.width}; make the overlap plan again`,
          ),
        );
      }
      refuseUnfit(plan, explainTileOverlapPlan(vae, plan.overlap.height, plan.overlap.width));
      vae.tiling = { ...vae.tiling, enabled: true, overlap: { ...plan.overlap } };
      return;
    case 'frames':
      if (plan.frames) refuseUnfit(plan, explainTileFramePlan(vae, plan.frames.window, plan.frames.overlap));
      vae.tiling = {
        ...vae.tiling,
        frames: plan.frames ? { enabled: true, ...plan.frames } : vae.tiling.frames ? { ...vae.tiling.frames, enabled: false } : null,
      };
      return;
  }
}

/**
 * A plan validated on another VAE of the same family (another config, so another ratio) may not
 * fit this one; installing it would give fractional latent tiles.
 */
function refuseUnfit(plan: TilePlan, reasons: Reason[]): void {
  if (reasons.length === 0) return;
  refuse('PLAN_REFUSED', reasons, { prefix: `this ${plan.kind} plan does not fit this VAE` });
}

/** A tiling to install with `setTiling`: sizes in output pixels / frames, each exact (never rounded). */
export interface TilingRequest {
  /** Tile window (height × width). Absent: the family's default window and overlap. */
  window?: Size2;
  /** Tile overlap for the window. Absent: with `window`, floor(window_lat / 4) latent units on tiled axes; else the family's default. */
  overlap?: Size2;
  /** Temporal tiling (families that chunk time): `{ window, overlap }` frames turn it on, null turns it off. Absent: as it is. */
  frames?: { window: number; overlap: number } | null;
  /** The output size the tiling is for: axes it leaves untiled must have overlap 0. */
  sampleShape?: SampleShape;
}

/**
 * Reasons `setTiling(vae, request)` would refuse the request (empty when it would install it),
 * all at once: the window, the overlap against that window, and the frames.
 */
export function explainTiling(vae: VaeSpec, request: TilingRequest = {}): Reason[] {
  return resolveTiling(vae, request).reasons;
}

/**
 * The one way to set how a VAE tiles (docs/design.md §4): a request, a plan, or off.
 *
 * - a `TilingRequest`: tiling on with exactly the requested window, overlap and frames, or
 *   PLAN_REFUSED with every reason (the VAE left as it was). `setTiling(vae)` is diffusers'
 *   `enable_tiling()`: the family's default window and overlap, refused where that default does
 *   not land on whole latent units (diffusers' own output would be misshapen there);
 * - a `TilePlan` (from `tileShapePlan`, `tileOverlapPlan`, `tileFramePlan`): installed exactly,
 *   refused if it was validated for another family or no longer fits;
 * - `'off'`: one decoder call over the whole latent, spatially and temporally (diffusers'
 *   `disable_tiling()`).
 *
 * @example
 * setTiling(vae, { window: { height: 512, width: 512 }, overlap: { height: 128, width: 128 }, sampleShape: { height: 1024, width: 1536 } });
 * setTiling(vae, 'off');
 */
export function setTiling(vae: VaeSpec, tiling: TilingRequest | TilePlan | 'off' = {}): void {
  if (tiling === 'off') return disableTiling(vae);
  if ('kind' in tiling) return applyTilePlan(vae, tiling);
  const resolved = resolveTiling(vae, tiling);
  if (resolved.reasons.length > 0) refuse('PLAN_REFUSED', resolved.reasons);
  vae.tiling = resolved.tiling;
}

function disableTiling(vae: VaeSpec): void {
  vae.tiling = { ...vae.tiling, enabled: false, frames: vae.tiling.frames ? { ...vae.tiling.frames, enabled: false } : null };
}

/**
 * Installs a tiling state taken from another VAE of the same family and config (`vae.tiling` of
 * the coordinator's copy, sent to a rank; or a snapshot restored after a trial).
 */
export function installTiling(vae: VaeSpec, tiling: TilingState): void {
  vae.tiling = structuredClone(tiling);
}

function resolveTiling(vae: VaeSpec, request: TilingRequest): { reasons: Reason[]; tiling: TilingState } {
  const options: PlanOptions = request.sampleShape ? { sampleShape: request.sampleShape } : {};
  const reasons: Reason[] = [];
  let window: Size2;
  let overlap: Size2;
  if (request.window) {
    window = { height: request.window.height, width: request.window.width };
    const shapeReasons = explainTileShapePlan(vae, window.height, window.width, options);
    reasons.push(...shapeReasons);
    overlap =
      shapeReasons.length === 0 ? { ...tileShapePlan(vae, window.height, window.width, options)!.overlap } : { height: 0, width: 0 };
  } else {
    reasons.push(...defaultTilingReasons(vae));
    window = { ...vae.config.tiling.window };
    overlap = { ...vae.config.tiling.overlap };
  }
  if (request.overlap) {
    overlap = { height: request.overlap.height, width: request.overlap.width };
    reasons.push(...explainTileOverlapPlan(withWindow(vae, window), overlap.height, overlap.width, options));
  }
  let frames = vae.tiling.frames;
  if (request.frames === null) {
    if (vae.family.temporal.kind !== 'temporal-chunks') reasons.push(...explainTileFramePlan(vae, 0, 0));
    else if (frames) frames = { ...frames, enabled: false };
  } else if (request.frames !== undefined) {
    reasons.push(...explainTileFramePlan(vae, request.frames.window, request.frames.overlap));
    frames = { enabled: true, window: request.frames.window, overlap: request.frames.overlap };
  }
  return { reasons, tiling: { enabled: true, window, overlap, frames } };
}

/** The VAE as the planner sees it with another window installed (named fields: a loaded Vae's geometry is a getter a spread would drop). */
function withWindow(vae: VaeSpec, window: Size2): VaeSpec {
  return { family: vae.family, config: vae.config, geometry: vae.geometry, tiling: { ...vae.tiling, window: { ...window } } };
}

/** Why the family's default window and overlap do not fit this VAE's config (empty when they do). */
function defaultTilingReasons(vae: VaeSpec): Reason[] {
  const t = vae.config.tiling;
  return [
    ...explainTileShapePlan(vae, t.window.height, t.window.width),
    ...explainTileOverlapPlan(withWindow(vae, t.window), t.overlap.height, t.overlap.width),
  ].map((r) => ({
    ...r,
    code: 'DEFAULT_PLAN_NOT_WHOLE_LATENT' as const,
    message: `the ${vae.family.name} default plan (window ${t.window.height}x${t.window.width}, overlap ${t.overlap.height}x${t.overlap.width} px from the config) is refused: ${r.message}; diffusers' own tiled output would be misshapen here — pass an explicit window and overlap`,
  }));
}

/** Axes on which the sample fits in one window (so the plan leaves them untiled). */
export function untiledAxes(vae: VaeSpec, window: Size2, sample: SampleShape | undefined): { height: boolean; width: boolean } {
  if (!sample) return { height: false, width: false };
  const latent = latentShapeOf(vae.geometry, sample);
  const r = vae.geometry.spatialRatio;
  return { height: latent.height <= window.height / r, width: latent.width <= window.width / r };
}
