// One rank's side of a row-sharded decode: the shard plan's stage and attention-core models as
// onnxruntime sessions, and the walk through the steps for the rank's band. Every value is kept
// as the band's own rows only. Before a stage with a halo, each rank sends the rows its
// neighbours' halos need (to whichever ranks need them: with bands thinner than the halo that
// reaches past the next rank) and extends its inputs with the rows it receives; the stage runs on
// band + halo rows (zero padding then acts only at the true image border) and its outputs are
// cropped back to the band. Joining halo rows, cropping, GroupNorm statistics and their application
// happen inside the band models (band-models.ts), so JS only slices the rows it sends and
// merges the small statistics vectors (group-norm.ts, one all-gather per GroupNorm); attention
// gathers every band's keys and values and runs the core over the band's queries in chunks, so
// the score matrix stays bounded. Video values keep every frame on every rank (bands are rows of
// all frames); frame-major tokens are sliced and joined per frame through a framed view
// (rows.ts), and a frame-causal attention runs its unmasked core per query frame on the keys of
// that frame and earlier (gathered keys are joined into global frame-major order).

import { collectGarbage } from './collect.js';
import type { Communicator } from '../../ranks/program.js';
import { DistVaeError, throwIfAborted } from '../../errors.js';
import type { ModelProto } from '../../graph/onnx-proto.js';
import { createSession } from '../../runtime/session.js';
import type { Session, SessionOptions } from '../../runtime/session-types.js';
import { elementCount, type Tensor } from '../../tensor.js';
import type { SpatialFact } from '../../graph/locality.js';
import { wholeTimes } from '../../graph/ratio.js';
import { bandRows, haloRows, haloSources, rowsForReader, type Band } from './bands.js';
import { AFFINE_EPSILON, bandName } from './band-models.js';
import { allGroupStatistics, bandStatistics, groupNormAffine } from './group-norm.js';
import { framesOf, isFramed, layoutOf, rowUnit, shardPlan, type ShardPlan, type ShardPlanOptions, type ShardStep } from './plan.js';
import { concatAxis, framedView, mergeFrames, sliceRows } from './rows.js';

/** What a band run needs of a rank group's communicator. */
export type BandComm = Pick<Communicator, 'rank' | 'size' | 'send' | 'recv' | 'allReduce' | 'allGather'>;

/** The latent's size and every rank's band (the same on every rank). */
export interface ShardGeometry {
  latentRows: number;
  latentCols: number;
  /** Frames of a video latent (every rank holds all of them); absent for images. */
  latentFrames?: number;
  bands: Band[];
}

/** The framed view of a value whose row axis holds frame-major tokens (one block of rows per frame), else the value. */
function rowView(t: Tensor, f: SpatialFact, frames: number): { t: Tensor; axis: number } {
  return isFramed(f) ? { t: framedView(t, f.rowAxis, frames), axis: f.rowAxis + 1 } : { t, axis: f.rowAxis };
}

/** Scores held at once by one attention chunk (queries × keys), in elements (64 MiB of float32). */
const ATTENTION_CHUNK_ELEMENTS = 1 << 24;

/**
 * Buffers of dropped values handed to the stage outputs of the next few steps that have their
 * length, so repeated shapes (every resnet of a level) reuse pages instead of leaving garbage
 * for V8 to collect late (a forced collection after every step measured 215 MiB lower at 512² on
 * one rank). A dropped buffer no output of the next `LOOKAHEAD` steps takes is let go at once:
 * holding one until its length comes back measured +370 MiB. Only buffers it handed out come
 * back, so the caller's latent and received halo rows are never overwritten.
 */
class BufferPool {
  private readonly free = new Map<number, Float32Array[]>();
  private readonly own = new WeakSet<Float32Array>();

  /** `demand[i]`: the lengths of the outputs step i takes. */
  constructor(private readonly demand: readonly number[][]) {}

  take(length: number): Float32Array {
    const data = this.free.get(length)?.pop() ?? new Float32Array(length);
    this.own.add(data);
    return data;
  }

  /** After step `i`: keeps the dropped buffers the next steps take, lets the others go. */
  settle(i: number, dropped: readonly Float32Array[]): void {
    const wanted = new Map<number, number>();
    for (let j = i + 1; j <= i + LOOKAHEAD && j < this.demand.length; j++)
      for (const l of this.demand[j]!) wanted.set(l, (wanted.get(l) ?? 0) + 1);
    for (const d of dropped) {
      if (!this.own.has(d) || !wanted.has(d.length)) continue;
      const list = this.free.get(d.length);
      if (list) list.push(d);
      else this.free.set(d.length, [d]);
    }
    for (const [length, list] of this.free) {
      const keep = wanted.get(length) ?? 0;
      if (list.length > keep) list.length = keep;
      if (keep === 0) this.free.delete(length);
    }
  }
}

/** Steps ahead whose outputs may take a dropped buffer (two stages, with the GroupNorm steps between). */
const LOOKAHEAD = 4;

/** The dims of a value's band of `entries` on its row axis (per frame for frame-major tokens), or null when an axis size is unknown. */
function bandDims(f: SpatialFact, entries: number, batch: number, latentCols: number, latentFrames: number): number[] | null {
  const dims: number[] = [];
  for (let axis = 0; axis < f.rank; axis++) {
    if (axis === f.rowAxis) dims.push(entries * (isFramed(f) ? framesOf(f, latentFrames) : 1));
    else if (axis === f.frameAxis) dims.push(framesOf(f, latentFrames));
    else if (axis === f.colAxis) dims.push(wholeTimes(latentCols, f.scale.cols));
    else if (axis === 0) dims.push(batch);
    else if (f.dims[axis] == null) return null;
    else dims.push(f.dims[axis]!);
  }
  return dims;
}

/** Crop bounds travel as float32, exact for integers up to 2²⁴. */
const MAX_CROP_ENTRY = 1 << 24;

const identities = new Map<number, { zero: Tensor; one: Tensor }>();
/** The statistics that make the in-graph BatchNormalization a plain affine, per length (shared, never written). */
function identityStatistics(length: number): { zero: Tensor; one: Tensor } {
  let id = identities.get(length);
  if (!id)
    identities.set(
      length,
      (id = {
        zero: { dims: [length], data: new Float32Array(length) },
        one: { dims: [length], data: new Float32Array(length).fill(1 - AFFINE_EPSILON) },
      }),
    );
  return id;
}

export class StagedDecoder {
  private constructor(
    readonly plan: ShardPlan,
    /** A session per stage step and per attention step (its `apply` half when it has one), by step index. */
    private readonly sessions: Map<number, Session>,
    /** The `partial` half of an attention step with a summary (graph/stages.ts), by step index. */
    private readonly partials: Map<number, Session>,
  ) {}

  /**
   * Sessions for every stage of `model`. Sessions run without onnxruntime's memory arena: an
   * arena per session would keep every stage's peak allocated at once. And without its memory
   * pattern: arena-less, a stage's pattern is one block per run, and the blocks of the
   * low-resolution stages (under glibc's 32 MiB mmap threshold) stay in the C heap after the
   * run — 90–190 MiB of a 512² rank's peak; tensor by tensor they cost ~4 s more system time per
   * 512² decode (pages faulted afresh) for −70 to −100 MiB of peak (bench/shard.md). `options`:
   * the plan's (ShardPlanOptions: no halo joins for a single band).
   */
  static async create(model: ModelProto, session: SessionOptions = {}, options: ShardPlanOptions = {}): Promise<StagedDecoder> {
    const plan = shardPlan(model, options);
    const sessions = new Map<number, Session>();
    const partials = new Map<number, Session>();
    const open = (graph: ModelProto) => createSession(graph, { enableCpuMemArena: false, enableMemPattern: false, ...session });
    try {
      for (const [i, step] of plan.steps.entries()) {
        const graph =
          step.kind === 'stage'
            ? step.band.model
            : step.kind === 'attention'
              ? (step.split?.apply ?? step.frameCausal ?? step.core).model
              : null;
        if (graph) sessions.set(i, await open(graph));
        if (step.kind === 'attention' && step.split) partials.set(i, await open(step.split.partial.model));
      }
    } catch (e) {
      await Promise.all([...sessions.values(), ...partials.values()].map((s) => s.dispose()));
      throw e;
    }
    return new StagedDecoder(plan, sessions, partials);
  }

  /** Decodes this rank's band `latent` (B, C, band rows, W) into its band of the output. */
  async decodeBand(comm: BandComm, latent: Tensor, geometry: ShardGeometry, signal?: AbortSignal): Promise<Tensor> {
    const band = geometry.bands[comm.rank]!;
    const { staged } = this.plan;
    if (!this.plan.halos && geometry.bands.length > 1)
      throw new DistVaeError(
        'INVALID_ARGUMENT',
        `this staged decoder joins no halo rows (one band); it was given ${geometry.bands.length} bands`,
      );
    const values = new Map<string, Tensor>([[staged.input, latent]]);
    const batch = latent.dims[0]!;
    const pool = new BufferPool(
      this.plan.steps.map((step) =>
        step.kind === 'stage' ? this.outputSpans(step, band, geometry, batch).flatMap((o) => (o.dims ? [elementCount(o.dims)] : [])) : [],
      ),
    );
    for (const [i, step] of this.plan.steps.entries()) {
      throwIfAborted(signal);
      // Dead buffers of earlier steps (values, onnxruntime-node's wrappers) go before the stage
      // allocates its own: V8 schedules collections by its JS heap, not by these buffers, and left
      // to it they stay resident through the next stages (−220 MiB at 512² on one rank, bench/shard.md).
      if (step.kind === 'stage') collectGarbage();
      await this.runStep(i, step, values, comm, band, geometry, pool);
      const dropped: Float32Array[] = [];
      for (const [name, t] of values) {
        if ((this.plan.lastUse.get(name) ?? -1) > i) continue;
        values.delete(name);
        dropped.push(t.data);
      }
      pool.settle(i, dropped);
    }
    return values.get(staged.output)!;
  }

  async dispose(): Promise<void> {
    await Promise.all([...this.sessions.values(), ...this.partials.values()].map((s) => s.dispose()));
  }

  private async runStep(
    i: number,
    step: ShardStep,
    values: Map<string, Tensor>,
    comm: BandComm,
    band: Band,
    geometry: ShardGeometry,
    pool: BufferPool,
  ): Promise<void> {
    const read = (name: string) => values.get(name)!;
    if (step.kind === 'group-norm') {
      const { region, params } = step;
      const x = read(region.input);
      const [batch, channels] = x.dims as [number, number];
      const stats = await allGroupStatistics(
        comm,
        bandStatistics(
          read(bandName.mean(region.input)).data,
          read(bandName.m2(region.input)).data,
          batch,
          channels,
          params.groups,
          x.dims[x.dims.length - 1]!,
        ),
      );
      const { scale, shift } = groupNormAffine(stats, params, batch);
      values.set(bandName.scale(region.output), { dims: [scale.length], data: scale });
      values.set(bandName.shift(region.output), { dims: [shift.length], data: shift });
      return;
    }
    if (step.kind === 'attention') {
      values.set(step.region.output, await this.attention(i, step, read, comm, geometry));
      return;
    }
    const { band: model } = step;
    const feeds: Record<string, Tensor> = {};
    if (model.halo) {
      const pieces = await this.haloPieces(step, read, comm, band, geometry);
      model.inputs.forEach((name, k) => {
        const f = layoutOf(this.plan, name);
        feeds[bandName.above(name)] = pieces[k]!.above;
        feeds[bandName.band(name)] = rowView(read(name), f, framesOf(f, geometry.latentFrames ?? 1)).t;
        feeds[bandName.below(name)] = pieces[k]!.below;
      });
    } else {
      for (const name of model.inputs) feeds[name] = read(name);
    }
    for (const r of model.applies) {
      const scale = read(bandName.scale(r.output));
      feeds[bandName.scale(r.output)] = scale;
      feeds[bandName.shift(r.output)] = read(bandName.shift(r.output));
      feeds[bandName.zero(r.output)] = identityStatistics(scale.data.length).zero;
      feeds[bandName.one(r.output)] = identityStatistics(scale.data.length).one;
    }
    const spans = this.outputSpans(step, band, geometry, read(model.inputs[0]!).dims[0]!);
    if (model.halo) {
      model.outputs.forEach((name, k) => {
        const { f, from, to, frames } = spans[k]!;
        if (to > MAX_CROP_ENTRY)
          throw new DistVaeError(
            'UNSUPPORTED',
            `stage ${step.index} output ${name} has ${to} entries on its row axis; in-graph crops take at most ${MAX_CROP_ENTRY}`,
          );
        feeds[bandName.crop(name)] = isFramed(f)
          ? { dims: [3], data: Float32Array.of(from, to, frames) }
          : { dims: [2], data: Float32Array.of(from, to) };
      });
    }
    // Outputs go straight into buffers of values already dropped (or new ones): no copy out of
    // onnxruntime, and pages a decode already touched are reused.
    const into: Record<string, Tensor> = {};
    model.outputs.forEach((name, k) => {
      const { dims } = spans[k]!;
      if (dims) into[model.halo ? bandName.cropped(name) : name] = { dims, data: pool.take(elementCount(dims)) };
    });
    const outputs = await this.sessions.get(i)!.run(feeds, into);
    model.outputs.forEach((name, k) => {
      const { f, from, to, frames } = spans[k]!;
      const out = outputs[model.halo ? bandName.cropped(name) : name]!;
      const expected = (to - from) * (isFramed(f) ? frames : 1);
      if (out.dims[f.rowAxis] !== expected) {
        throw new DistVaeError(
          'TENSOR_INVALID',
          `stage ${step.index} produced ${name} with ${out.dims[f.rowAxis]} entries of the band on its row axis; ${expected} were expected`,
        );
      }
      values.set(name, out);
    });
    for (const r of model.stats) {
      values.set(bandName.mean(r.input), outputs[bandName.mean(r.input)]!);
      values.set(bandName.m2(r.input), outputs[bandName.m2(r.input)]!);
    }
  }

  /** Where each output's band lies in what the stage computes (entries of its row axis), and its band's dims when known. */
  private outputSpans(step: Extract<ShardStep, { kind: 'stage' }>, band: Band, geometry: ShardGeometry, batch: number) {
    return step.band.outputs.map((name) => {
      const f = layoutOf(this.plan, name);
      const unit = rowUnit(f, geometry.latentCols);
      const read = haloRows(band, step.halo, geometry.latentRows, f.scale.rows);
      const own = bandRows(band, f.scale.rows);
      const from = (own.from - read.from) * unit;
      const to = (own.to - read.from) * unit;
      const frames = f.frameAxis === null ? 1 : framesOf(f, geometry.latentFrames ?? 1);
      return { f, from, to, frames, dims: bandDims(f, to - from, batch, geometry.latentCols, geometry.latentFrames ?? 1) };
    });
  }

  /**
   * The rows of every input that this band's halo needs from the ranks above and below it
   * (empty at the image border); this rank sends its own rows to whichever ranks need them.
   */
  private async haloPieces(
    step: Extract<ShardStep, { kind: 'stage' }>,
    read: (n: string) => Tensor,
    comm: BandComm,
    band: Band,
    geometry: ShardGeometry,
  ): Promise<{ above: Tensor; below: Tensor }[]> {
    const { halo, index } = step;
    const names = step.band.inputs;
    const { bands, latentRows, latentCols } = geometry;
    const tag = `halo:${index}`;
    const layouts = names.map((n) => layoutOf(this.plan, n));
    const views = names.map((n, k) => rowView(read(n), layouts[k]!, framesOf(layouts[k]!, geometry.latentFrames ?? 1)));
    for (const reader of bands) {
      if (!haloSources(bands, reader, halo).includes(band.rank)) continue;
      const slabs = names.map((_, k) => {
        const f = layouts[k]!;
        const own = bandRows(band, f.scale.rows);
        const rows = rowsForReader(band, reader, halo, latentRows, f.scale.rows);
        const { t, axis } = views[k]!;
        return sliceRows(t, axis, rowUnit(f, latentCols), rows.from - own.from, rows.to - own.from).data;
      });
      comm.send(reader.rank, slabs, tag);
    }
    const sources = haloSources(bands, band, halo);
    const received = (await Promise.all(sources.map((r) => comm.recv(r, tag)))) as Float32Array[][];
    return names.map((_, k) => {
      const f = layouts[k]!;
      const unit = rowUnit(f, latentCols);
      const { t: own, axis } = views[k]!;
      const piece = (r: number, j: number): Tensor => {
        const rows = rowsForReader(bands[r]!, band, halo, latentRows, f.scale.rows);
        const dims = [...own.dims];
        dims[axis] = (rows.to - rows.from) * unit;
        return { dims, data: received[j]![k]! };
      };
      const side = (pieces: Tensor[]): Tensor => {
        if (pieces.length > 0) return concatAxis(pieces, axis);
        const dims = [...own.dims];
        dims[axis] = 0;
        return { dims, data: new Float32Array(0) };
      };
      return {
        above: side(sources.flatMap((r, j) => (r < band.rank ? [piece(r, j)] : []))),
        below: side(sources.flatMap((r, j) => (r > band.rank ? [piece(r, j)] : []))),
      };
    });
  }

  /**
   * Keys and values of every band, then the core over this band's queries, chunk by chunk; or,
   * for a core with a summary (linear attention), this band's summary of its keys and values,
   * summed over the bands by one all-reduce (float64, rank order: the same bits on every rank),
   * then the core's second half over this band's queries.
   */
  private async attention(
    i: number,
    step: Extract<ShardStep, { kind: 'attention' }>,
    read: (n: string) => Tensor,
    comm: BandComm,
    geometry: ShardGeometry,
  ): Promise<Tensor> {
    const { region, core } = step;
    if (step.split && region.summary) {
      const { partial, apply } = step.split;
      const name = region.summary.value;
      const feeds: Record<string, Tensor> = { [region.key]: read(region.key), [region.value]: read(region.value) };
      for (const input of partial.inputs)
        if (!(input in feeds))
          throw new DistVaeError('INVALID_ARGUMENT', `attention summary ${region.name} reads ${input}, which is not its key or value`);
      const own = (await this.partials.get(i)!.run(feeds))[name]!;
      const summed = await comm.allReduce(Float64Array.from(own.data), 'sum');
      const applyFeeds: Record<string, Tensor> = {
        [region.query]: read(region.query),
        [name]: { dims: own.dims, data: Float32Array.from(summed) },
      };
      for (const input of apply.inputs)
        if (!(input in applyFeeds))
          throw new DistVaeError('INVALID_ARGUMENT', `attention core ${region.name} reads ${input}, which is not its query or summary`);
      return (await this.sessions.get(i)!.run(applyFeeds))[region.output]!;
    }
    const q = read(region.query);
    const k = read(region.key);
    const v = read(region.value);
    const gathered = (await comm.allGather([k.data, v.data])) as Float32Array[][];
    // Frame-major tokens: every band's block of rows per frame, joined frame by frame into the
    // whole latent's frame-major order (frames = 1 for images: the bands in rank order).
    const f = layoutOf(this.plan, region.key);
    const frames = isFramed(f) ? framesOf(f, geometry.latentFrames ?? 1) : 1;
    const tokens = (rank: number, name: string) => {
      const layout = layoutOf(this.plan, name);
      const rows = bandRows(geometry.bands[rank]!, layout.scale.rows);
      return (rows.to - rows.from) * rowUnit(layout, geometry.latentCols);
    };
    const join = (t: Tensor, which: 0 | 1, name: string) =>
      mergeFrames(
        concatAxis(
          gathered.map((parts, rank) => ({ dims: [t.dims[0]!, t.dims[1]!, frames, tokens(rank, name)], data: parts[which]! })),
          3,
        ),
        2,
      );
    const keys = join(k, 0, region.key);
    const vals = join(v, 1, region.value);
    const session = this.sessions.get(i)!;
    const run = async (queries: Tensor, keysUpTo: number): Promise<Tensor[]> => {
      const [ks, vs] = keysUpTo === keys.dims[2] ? [keys, vals] : [sliceRows(keys, 2, 1, 0, keysUpTo), sliceRows(vals, 2, 1, 0, keysUpTo)];
      const n = queries.dims[1]!;
      const chunk = Math.max(1, Math.floor(ATTENTION_CHUNK_ELEMENTS / Math.max(1, keysUpTo)));
      const parts: Tensor[] = [];
      for (let from = 0; from < n; from += chunk) {
        const part = from === 0 && chunk >= n ? queries : sliceRows(queries, 1, 1, from, Math.min(n, from + chunk));
        const feeds: Record<string, Tensor> = { [region.query]: part, [region.key]: ks, [region.value]: vs };
        for (const name of (step.frameCausal ?? core).inputs)
          if (!(name in feeds))
            throw new DistVaeError('INVALID_ARGUMENT', `attention core ${region.name} reads ${name}, which is not its query, key or value`);
        parts.push((await session.run(feeds))[region.output]!);
      }
      return parts;
    };
    if (!step.frameCausal) return concatAxis(await run(q, keys.dims[2]!), 2);
    // Frame-causal: the queries of frame t read the keys of frames 0..t, a prefix of the joined keys.
    const perFrameQueries = q.dims[1]! / frames;
    const perFrameKeys = keys.dims[2]! / frames;
    const parts: Tensor[] = [];
    for (let t = 0; t < frames; t++) {
      const queries = sliceRows(q, 1, 1, t * perFrameQueries, (t + 1) * perFrameQueries);
      parts.push(...(await run(queries, (t + 1) * perFrameKeys)));
    }
    return concatAxis(parts, 2);
  }
}
