// Typed readers for diffusers `config.json` fields. Each reader applies the family's default
// when the field is absent and records a reason when the value has the wrong type or range,
// so a config with several problems is refused once, listing all of them.

import { reason, type Reason, refuse } from '../errors.js';
import type { RawConfig } from './types.js';

/**
 * Config fields the project adds to diffusers' own: settings of how a decode runs (docs/design.md §9:
 * the decode timestep is a config setting), given in config.json or as an override. A family
 * whose decoder has no use for one refuses it (registry.resolveFamilyConfig).
 */
export const DECODE_SETTING_FIELDS: readonly string[] = ['decode_timestep'];

/**
 * The largest integer a structural field may hold: a depth, a count, a ratio, a size (widths
 * have their own bound, MAX_WIDTH). No published VAE comes near it (depths are a handful); it
 * keeps a config like `layers_per_block: 100000` from making parameter lists and graphs whose
 * length alone exhausts memory or the stack before their bytes could be judged.
 */
export const MAX_CONFIG_INT = 8192;

/**
 * The largest channel width: a tensor dimension beyond it cannot index a typed array. Widths
 * below it are judged by the weight bytes they imply against the memory budget
 * (sources/weight-budget.ts), so `block_out_channels: [4096]` and `[1e9]` are refused the same way.
 */
export const MAX_WIDTH = 2 ** 31 - 1;

/**
 * The most repeated blocks (resnets, TAE blocks) a decoder may declare. Published VAEs have a
 * few dozen; within the per-field bound a config could still multiply levels by depths into
 * millions, whose parameter list and graph alone would exhaust memory before their weight bytes
 * could be judged. (A 16386-resnet decoder already takes minutes to build and run.)
 */
export const MAX_DECODER_BLOCKS = 4096;

const inRange = (v: unknown, min: number, max = MAX_CONFIG_INT): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;

export class ConfigReader {
  readonly reasons: Reason[] = [];
  readonly fields: Record<string, unknown> = {};

  constructor(
    private readonly raw: RawConfig,
    private readonly familyName: string,
  ) {}

  private present(key: string): boolean {
    return this.raw[key] !== undefined && this.raw[key] !== null;
  }

  private refuse(key: string, value: unknown, valid: string): void {
    this.reasons.push(
      reason(
        'CONFIG_FIELD_INVALID',
        key,
        value,
        valid,
        `config field ${key} = ${JSON.stringify(value)} is invalid for ${this.familyName}: expected ${valid}`,
      ),
    );
  }

  int(key: string, fallback: number, min = 1, max = MAX_CONFIG_INT): number {
    const value = this.present(key) ? this.raw[key] : fallback;
    if (!inRange(value, min, max)) {
      this.refuse(key, value, `an integer in [${min}, ${max}]`);
      return (this.fields[key] = fallback);
    }
    return (this.fields[key] = value);
  }

  /** An integer that may also be given as a list whose first entry counts (diffusers' sample_size). */
  intOrFirst(key: string, fallback: number, min = 1): number {
    const value = this.present(key) ? this.raw[key] : fallback;
    const first = Array.isArray(value) ? value[0] : value;
    if (!inRange(first, min)) {
      this.refuse(key, value, `an integer in [${min}, ${MAX_CONFIG_INT}] (or a list whose first entry is one)`);
      return (this.fields[key] = fallback);
    }
    this.fields[key] = value;
    return first;
  }

  optionalInt(key: string, min = 1, max = MAX_CONFIG_INT): number | null {
    if (!this.present(key)) return (this.fields[key] = null);
    const value = this.raw[key];
    if (!inRange(value, min, max)) {
      this.refuse(key, value, `an integer in [${min}, ${max}] or null`);
      return (this.fields[key] = null);
    }
    return (this.fields[key] = value);
  }

  number(key: string, fallback: number): number {
    const value = this.present(key) ? this.raw[key] : fallback;
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      this.refuse(key, value, 'a finite number');
      return (this.fields[key] = fallback);
    }
    return (this.fields[key] = value);
  }

  bool(key: string, fallback: boolean): boolean {
    const value = this.present(key) ? this.raw[key] : fallback;
    if (typeof value !== 'boolean') {
      this.refuse(key, value, 'true or false');
      return (this.fields[key] = fallback);
    }
    return (this.fields[key] = value);
  }

  string(key: string, fallback: string, allowed?: readonly string[]): string {
    const value = this.present(key) ? this.raw[key] : fallback;
    if (typeof value !== 'string' || (allowed && !allowed.includes(value))) {
      this.refuse(key, value, allowed ? `one of ${allowed.join(', ')}` : 'a string');
      return (this.fields[key] = fallback);
    }
    return (this.fields[key] = value);
  }

  /** A list of integers; `max` bounds its entries (MAX_WIDTH for widths), MAX_CONFIG_INT its length. */
  intList(key: string, fallback: readonly number[], opts: { min?: number; max?: number; minLength?: number } = {}): number[] {
    const min = opts.min ?? 1;
    const max = opts.max ?? MAX_CONFIG_INT;
    const minLength = opts.minLength ?? 1;
    const value = this.present(key) ? this.raw[key] : fallback;
    if (!Array.isArray(value) || value.length < minLength || value.length > MAX_CONFIG_INT || !value.every((v) => inRange(v, min, max))) {
      this.refuse(key, value, `a list of ${minLength} to ${MAX_CONFIG_INT} integers in [${min}, ${max}]`);
      return (this.fields[key] = [...fallback]) as number[];
    }
    return (this.fields[key] = [...(value as number[])]) as number[];
  }

  /** A list of integers, or one integer repeated `length` times (diffusers accepts both for per-block settings). */
  intOrIntList(key: string, fallback: number | readonly number[], length: number, min = 1): number[] {
    const value = this.present(key) ? this.raw[key] : fallback;
    if (inRange(value, min)) {
      return (this.fields[key] = new Array<number>(length).fill(value)) as number[];
    }
    if (Array.isArray(value) && value.length === length && value.every((v) => inRange(v, min))) {
      return (this.fields[key] = [...(value as number[])]) as number[];
    }
    this.refuse(key, value, `an integer in [${min}, ${MAX_CONFIG_INT}] or a list of ${length} of them`);
    const fb = typeof fallback === 'number' ? new Array<number>(length).fill(fallback) : [...fallback];
    return (this.fields[key] = fb) as number[];
  }

  /** A list of booleans, or one boolean repeated `length` times. */
  boolOrBoolList(key: string, fallback: boolean | readonly boolean[], length: number | null): boolean[] {
    const value = this.present(key) ? this.raw[key] : fallback;
    if (typeof value === 'boolean' && length !== null) return (this.fields[key] = new Array<boolean>(length).fill(value)) as boolean[];
    if (Array.isArray(value) && (length === null || value.length === length) && value.every((v) => typeof v === 'boolean')) {
      return (this.fields[key] = [...(value as boolean[])]) as boolean[];
    }
    this.refuse(key, value, length === null ? 'a list of booleans' : `a boolean or a list of ${length} booleans`);
    const fb = typeof fallback === 'boolean' ? new Array<boolean>(length ?? 0).fill(fallback) : [...fallback];
    return (this.fields[key] = fb) as boolean[];
  }

  stringList(key: string, fallback: readonly string[]): string[] {
    const value = this.present(key) ? this.raw[key] : fallback;
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
      this.refuse(key, value, 'a list of strings');
      return (this.fields[key] = [...fallback]) as string[];
    }
    return (this.fields[key] = [...(value as string[])]) as string[];
  }

  /** Keeps a field as given (e.g. latents_mean) without interpreting it. */
  passthrough(key: string, fallback: unknown = null): unknown {
    return (this.fields[key] = this.present(key) ? this.raw[key] : fallback);
  }

  /** Refuses a decoder (or encoder) of more than MAX_DECODER_BLOCKS repeated blocks; `fields` names what multiplies into `blocks`. */
  blocks(blocks: number, fields: string, value: unknown, half: 'decoder' | 'encoder' = 'decoder'): void {
    this.check(
      blocks <= MAX_DECODER_BLOCKS,
      fields,
      value,
      `at most ${MAX_DECODER_BLOCKS} ${half} blocks in all`,
      `${fields} = ${JSON.stringify(value)} make ${half === 'encoder' ? 'an' : 'a'} ${half} of ${blocks} repeated blocks, more than ${MAX_DECODER_BLOCKS} (published VAEs have a few dozen): its parameter list and graph alone would exhaust memory`,
    );
  }

  /** Adds a cross-field refusal. */
  check(ok: boolean, key: string, value: unknown, valid: string, message: string): void {
    if (!ok) this.reasons.push(reason('CONFIG_INCONSISTENT', key, value, valid, message));
  }

  /**
   * Refuses a compression ratio the config states (`key`) that the decoder's layers do not
   * produce: `how` says how the decoder's ratio is computed, `what` names that up-sampling.
   */
  checkRatio(key: string, stated: number, decoder: number, how: string, what = 'the decoder'): void {
    this.check(stated === decoder, key, stated, `${decoder} (${how})`, `${key} = ${stated} disagrees with ${what} (${decoder})`);
  }

  /** Throws CONFIG_INVALID listing every reason collected, if any. */
  finish(): void {
    if (this.reasons.length > 0) {
      refuse('CONFIG_INVALID', this.reasons, { prefix: `${this.familyName} config refused` });
    }
  }
}

export function log2Exact(n: number): number | null {
  const l = Math.log2(n);
  return Number.isInteger(l) ? l : null;
}

/**
 * The decoder body of the AutoencoderKL lineage (AutoencoderKL, Flux.2, HunyuanVideo), read in
 * diffusers' order: `block_out_channels` (published SD 1.x widths by default), `layers_per_block`
 * (the two bounded together), SiLU. Returns the widths.
 */
export function readBlockOutLayers(r: ConfigReader): number[] {
  const blockOut = r.intList('block_out_channels', [128, 256, 512, 512], { max: MAX_WIDTH });
  const layers = r.int('layers_per_block', 2);
  r.blocks(blockOut.length * (layers + 1), 'block_out_channels × layers_per_block', {
    block_out_channels: blockOut.length,
    layers_per_block: layers,
  });
  r.string('act_fn', 'silu', ['silu']);
  return blockOut;
}
