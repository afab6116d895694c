// A pipeline's latent scaling, both ways: `scaleLatents` is what a pipeline does to `vae.encode`'s
// latents before the denoiser sees them (img2img's `_encode_vae_image`), `unscaleLatents` what it
// does before `vae.decode` — one pair, so `encode --latents-scaled` writes exactly what
// `decode --latents-scaled` reads back. The config declares which scaling applies (read by
// `latentScalingOf` from its fields, never from a family name):
//   - batch_norm_eps (AutoencoderKLFlux2): the latents are 2×2-patchified to (B, 4C, H/2, W/2) and
//     normalised by the checkpoint's batch-norm statistics bn.running_mean / bn.running_var;
//   - latents_mean + latents_std (Wan, Qwen-Image; SDXL-style with a scaling_factor too);
//   - scaling_factor, optional shift_factor (SD, SDXL, SD3, FLUX.1, HunyuanVideo, TAE).
// Every operation is one float32 operation, rounded, in the order torch evaluates the pipeline's
// expression, so our values equal the pipeline's bit for bit where torch rounds the same way.

import { DistVaeError, reason, type ReasonCode } from '../errors.js';
import type { Tensor } from '../tensor.js';

/** Flux.2's latent batch-norm statistics over the patchified channels (4C values each). */
export interface LatentBatchNorm {
  readonly mean: Float32Array;
  readonly variance: Float32Array;
  readonly eps: number;
  /** The pipeline's patch (config `patch_size`), [2, 2] for FLUX.2. */
  readonly patch: readonly [number, number];
}

/** The scaling a pipeline applies between the VAE and the denoiser (see the header for which). */
export interface LatentScaling {
  readonly scalingFactor?: number;
  readonly shiftFactor?: number;
  /** Per-channel statistics (config `latents_mean`, `latents_std`). */
  readonly latentsMean?: readonly number[];
  readonly latentsStd?: readonly number[];
  readonly batchNorm?: LatentBatchNorm;
}

const f = Math.fround;

function configInvalid(code: ReasonCode, field: string, value: unknown, valid: string, message?: string): never {
  const r = reason(code, field, value, valid, message);
  throw new DistVaeError('CONFIG_INVALID', r.message, { reasons: [r] });
}

const isNumberList = (v: unknown): v is number[] =>
  Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number' && Number.isFinite(x));

/**
 * The scaling a VAE config declares (see the header). Flux.2's statistics live in the checkpoint,
 * not the config: pass them as `batchNorm` ({ mean, variance } of bn.running_*); a config with
 * batch_norm_eps and no statistics is refused, as is a config with nothing to scale by.
 */
export function latentScalingOf(
  fields: Readonly<Record<string, unknown>>,
  family: string,
  stats: { batchNorm?: { mean: Float32Array; variance: Float32Array } } = {},
): LatentScaling {
  const eps = fields['batch_norm_eps'];
  if (typeof eps === 'number') {
    const patchField = fields['patch_size'];
    const patch = (Array.isArray(patchField) && patchField.length === 2 ? patchField : [2, 2]) as [number, number];
    if (!stats.batchNorm) {
      configInvalid(
        'NO_LATENT_STATISTICS',
        'bn.running_mean',
        undefined,
        "the checkpoint's bn.running_mean and bn.running_var",
        `the ${family} pipeline normalises its latents by the checkpoint's batch-norm statistics (bn.running_mean / bn.running_var), which were not given; drop --latents-scaled or use a checkpoint that holds them`,
      );
    }
    const { mean, variance } = stats.batchNorm;
    const channels = mean.length;
    if (
      channels === 0 ||
      variance.length !== channels ||
      !mean.every(Number.isFinite) ||
      !variance.every((v) => Number.isFinite(v) && v >= 0)
    ) {
      configInvalid(
        'LATENT_STATISTICS_INVALID',
        'bn.running_var',
        `${mean.length} means, ${variance.length} variances`,
        'as many finite means as non-negative variances',
      );
    }
    return { batchNorm: { mean, variance, eps, patch } };
  }
  const scalingFactor = fields['scaling_factor'];
  const shiftFactor = fields['shift_factor'];
  const [mean, std] = [fields['latents_mean'], fields['latents_std']];
  if (mean !== undefined && mean !== null) {
    if (!isNumberList(mean) || !isNumberList(std) || std.length !== mean.length || std.some((s) => s === 0)) {
      configInvalid(
        'LATENT_STATISTICS_INVALID',
        'latents_std',
        std,
        `a list of ${Array.isArray(mean) ? mean.length : 'as many'} finite non-zero numbers, as long as latents_mean`,
      );
    }
    return { latentsMean: mean, latentsStd: std, ...(typeof scalingFactor === 'number' ? { scalingFactor } : {}) };
  }
  if (typeof scalingFactor !== 'number') {
    configInvalid(
      'NO_SCALING_FACTOR',
      'scaling_factor',
      scalingFactor,
      'a number in the VAE config',
      `the ${family} VAE config has no scaling_factor (nor latents_mean / latents_std) to scale the latents with; drop --latents-scaled or add scaling_factor to config.json`,
    );
  }
  return { scalingFactor, ...(typeof shiftFactor === 'number' ? { shiftFactor } : {}) };
}

function checkScaling(scaling: LatentScaling): void {
  const { scalingFactor, shiftFactor = 0 } = scaling;
  if (scalingFactor !== undefined && (!Number.isFinite(scalingFactor) || scalingFactor === 0 || !Number.isFinite(shiftFactor))) {
    configInvalid(
      'SCALING_INVALID',
      'scaling_factor',
      scalingFactor,
      'a finite non-zero scaling_factor and a finite shift_factor in the VAE config',
    );
  }
}

function channelsOf(latents: Tensor, expected: number, what: string): number {
  const c = latents.dims[1];
  if (latents.dims.length < 3 || c !== expected) {
    throw new DistVaeError(
      'TENSOR_INVALID',
      `latents [${latents.dims.join(', ')}] have ${c ?? 'no'} channels on axis 1; the ${what} have ${expected}`,
    );
  }
  return latents.data.length / (latents.dims[0]! * c);
}

/** `op(x, channel)` over every value, channel = axis 1. */
function perChannel(latents: Tensor, channels: number, plane: number, op: (x: number, c: number) => number): Tensor {
  const out = new Float32Array(latents.data.length);
  for (let i = 0; i < out.length; i++) out[i] = op(latents.data[i]!, Math.floor(i / plane) % channels);
  return { dims: [...latents.dims], data: out };
}

/** (B, C, H, W) → (B, C·ph·pw, H/ph, W/pw), channel c·ph·pw + dy·pw + dx: the pipeline's `_patchify_latents`. */
export function patchifyLatents(latents: Tensor, [ph, pw]: readonly [number, number]): Tensor {
  const [b, c, h, w] = latents.dims as [number, number, number, number];
  if (latents.dims.length !== 4 || h % ph !== 0 || w % pw !== 0) {
    throw new DistVaeError(
      'TENSOR_INVALID',
      `latents [${latents.dims.join(', ')}] cannot be patchified by ${ph}x${pw}: the pipeline takes (B, C, H, W) with H a multiple of ${ph} and W of ${pw}`,
    );
  }
  const [oh, ow] = [h / ph, w / pw];
  const out = new Float32Array(latents.data.length);
  let o = 0;
  for (let bi = 0; bi < b; bi++)
    for (let ci = 0; ci < c; ci++)
      for (let dy = 0; dy < ph; dy++)
        for (let dx = 0; dx < pw; dx++)
          for (let y = 0; y < oh; y++)
            for (let x = 0; x < ow; x++) out[o++] = latents.data[((bi * c + ci) * h + y * ph + dy) * w + x * pw + dx]!;
  return { dims: [b, c * ph * pw, oh, ow], data: out };
}

/** The inverse of `patchifyLatents`: the pipeline's `_unpatchify_latents`. */
export function unpatchifyLatents(latents: Tensor, [ph, pw]: readonly [number, number]): Tensor {
  const [b, cp, oh, ow] = latents.dims as [number, number, number, number];
  if (latents.dims.length !== 4 || cp % (ph * pw) !== 0) {
    throw new DistVaeError(
      'TENSOR_INVALID',
      `latents [${latents.dims.join(', ')}] are not ${ph}x${pw}-patchified (B, C·${ph * pw}, H/${ph}, W/${pw}) latents`,
    );
  }
  const c = cp / (ph * pw);
  const [h, w] = [oh * ph, ow * pw];
  const out = new Float32Array(latents.data.length);
  let i = 0;
  for (let bi = 0; bi < b; bi++)
    for (let ci = 0; ci < c; ci++)
      for (let dy = 0; dy < ph; dy++)
        for (let dx = 0; dx < pw; dx++)
          for (let y = 0; y < oh; y++)
            for (let x = 0; x < ow; x++) out[((bi * c + ci) * h + y * ph + dy) * w + x * pw + dx] = latents.data[i++]!;
  return { dims: [b, c, h, w], data: out };
}

/** sqrt(var + eps) per channel, in float32 as torch computes it. */
const bnStd = (bn: LatentBatchNorm): Float32Array => bn.variance.map((v) => f(Math.sqrt(f(v + bn.eps))));

/**
 * What a pipeline does to `vae.encode`'s latents before the denoiser (img2img): (x − shift)·sf;
 * (x − mean)·(1/std) (Wan, Qwen-Image) or (x − mean)·sf/std (with a scaling_factor); Flux.2:
 * patchify, then (x − bn_mean)/sqrt(bn_var + eps). A new tensor; `unscaleLatents` undoes it.
 */
export function scaleLatents(latents: Tensor, scaling: LatentScaling): Tensor {
  checkScaling(scaling);
  const { scalingFactor, shiftFactor = 0, latentsMean, latentsStd, batchNorm } = scaling;
  if (batchNorm) {
    const patched = patchifyLatents(latents, batchNorm.patch);
    const plane = channelsOf(patched, batchNorm.mean.length, 'batch-norm statistics');
    const std = bnStd(batchNorm);
    return perChannel(patched, batchNorm.mean.length, plane, (x, c) => f(f(x - batchNorm.mean[c]!) / std[c]!));
  }
  if (latentsMean && latentsStd) {
    const plane = channelsOf(latents, latentsMean.length, 'config latents_mean');
    const mean = latentsMean.map(f);
    if (scalingFactor === undefined) {
      const inv = latentsStd.map((s) => f(1 / f(s)));
      return perChannel(latents, mean.length, plane, (x, c) => f(f(x - mean[c]!) * inv[c]!));
    }
    const [sf, std] = [f(scalingFactor), latentsStd.map(f)];
    return perChannel(latents, mean.length, plane, (x, c) => f(f(f(x - mean[c]!) * sf) / std[c]!));
  }
  const [sf, shift] = [f(scalingFactor!), f(shiftFactor)];
  return { dims: [...latents.dims], data: latents.data.map((v) => f(f(v - shift) * sf)) };
}

/**
 * What the pipelines do before `vae.decode`, the inverse of `scaleLatents`: x/sf + shift;
 * x/(1/std) + mean (Wan, Qwen-Image) or x·std/sf + mean; Flux.2: x·sqrt(bn_var + eps) + bn_mean,
 * then unpatchify — for latents saved from the denoiser's side (`output_type="latent"`; Flux.2's
 * as the (B, 4C, H/2, W/2) grid `_encode_vae_image` makes, unpacked from its tokens). A new tensor.
 */
export function unscaleLatents(latents: Tensor, scaling: LatentScaling): Tensor {
  checkScaling(scaling);
  const { scalingFactor, shiftFactor = 0, latentsMean, latentsStd, batchNorm } = scaling;
  if (batchNorm) {
    const plane = channelsOf(latents, batchNorm.mean.length, 'batch-norm statistics');
    const std = bnStd(batchNorm);
    const normalised = perChannel(latents, batchNorm.mean.length, plane, (x, c) => f(f(x * std[c]!) + batchNorm.mean[c]!));
    return unpatchifyLatents(normalised, batchNorm.patch);
  }
  if (latentsMean && latentsStd) {
    const plane = channelsOf(latents, latentsMean.length, 'config latents_mean');
    const mean = latentsMean.map(f);
    if (scalingFactor === undefined) {
      const inv = latentsStd.map((s) => f(1 / f(s)));
      return perChannel(latents, mean.length, plane, (x, c) => f(f(x / inv[c]!) + mean[c]!));
    }
    const [sf, std] = [f(scalingFactor), latentsStd.map(f)];
    return perChannel(latents, mean.length, plane, (x, c) => f(f(f(x * std[c]!) / sf) + mean[c]!));
  }
  const [sf, shift] = [f(scalingFactor!), f(shiftFactor)];
  return { dims: [...latents.dims], data: latents.data.map((v) => f(f(v / sf) + shift)) };
}
