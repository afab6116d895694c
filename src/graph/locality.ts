// Locality analysis (docs/design.md §7): whether — and with how much halo — a band or tile of a built
// graph's input reproduces the matching part of the whole decode, computed from the graph's own
// nodes (no architecture knowledge). The model is cut at its sync regions (stages.ts); through
// each stage every value is interpreted abstractly: which axis holds its rows (and columns, or
// rows·columns once flattened to tokens), its resolution relative to the latent (a ratio), the
// channel sizes that are known, and how deep wrong values reach in from a cut edge — the rows a
// banded run must crop. A cut edge behaves like the image border to the graph's zero padding,
// so a same-size convolution with pads (pb, pe) deepens the wrong band by pb rows at the top and
// pe at the bottom; a nearest 2× upsample (or depth-to-space) doubles it, in rows of the finer
// grid; a stride-s convolution divides it (rounded up). Ops that read every position
// (normalisation statistics, softmax or matrix products over positions) are nonlocal; ops whose
// effect on positions the analysis does not model (padding or slicing of spatial axes, size
// changing convolutions, resizes other than integer nearest) are reported as unanalysed — both
// rule exactness out for their stage, naming the node. Which of these an op is comes from its
// locality rule in the op table (ops.ts); an op outside the table is unanalysed.
//
// Per stage the halo is the smallest number of latent rows (and columns) that covers the depth
// of every stage output and lands on whole rows of every stage input and output.

import { DistVaeError } from '../errors.js';
import { intAttribute, intsAttribute, stringAttribute, tensorAttribute } from './attributes.js';
import type { ModelProto, NodeProto, TensorProto } from './onnx-proto.js';
import { normaliseAxis, opRule } from './ops.js';
import {
  ceilToWholeRows,
  divRatio,
  equalRatio,
  formatRatio,
  maxRatio,
  mulRatio,
  ONE,
  ratio,
  wholeTimes,
  ZERO,
  compareRatio,
  type Ratio,
} from './ratio.js';
import { graphIO, segmentGraph, type Segment } from './stages.js';
import { ATTENTION_TOKEN_AXES, describeRegion, regionInputs, syncRegionsOf, type SyncRegion } from './sync.js';
import { tensorProtoValues } from './tensor-proto.js';

/** Rows and columns of a value per latent row and column. */
export interface Scale {
  rows: Ratio;
  cols: Ratio;
}

/** How far wrong values reach in from each cut edge, in the value's own rows and columns. */
export interface Depth {
  top: number;
  bottom: number;
  left: number;
  right: number;
}

/** A value that varies with position: where its rows are and at what resolution. */
export interface SpatialFact {
  kind: 'spatial';
  rank: number;
  rowAxis: number;
  /** The column axis; null when rows and columns are flattened into `rowAxis` (tokens, row-major). */
  colAxis: number | null;
  scale: Scale;
  /** Known sizes of the other axes (null: unknown or symbolic; the spatial axes are null). */
  dims: (number | null)[];
  depth: Depth;
  /**
   * The axis holding frames (video values, (B, C, F, H, W)): never split across bands; equal to
   * `rowAxis` when frames, rows and columns are flattened into tokens frame-major (a band's
   * tokens are then one block of rows per frame). Null for images.
   */
  frameAxis: number | null;
  /** The frame count as a·F + b of the graph input's F frames (null: images, or not known). */
  frames: Affine | null;
  /** Rows and columns of padding beyond the band on each side (a Pad of a spatial axis, read only by a Conv). */
  margin?: Depth;
}

/** a·F + b for the graph input's frame count F (a decoder's latent, an encoder's video); a and b may be fractions after a strided conv in time. */
export interface Affine {
  a: number;
  b: number;
}

/** One entry of a shape vector computed in-graph: coefficient × a product of symbols (B batch, F(a,b) frames, H rows, W columns, U… unknown). */
interface Sym {
  coef: Ratio;
  syms: string[];
}

export type Fact =
  | SpatialFact
  /** The same for every position (initializers, literals and what is computed from them only). */
  | { kind: 'const'; dims: number[] | null }
  /** Shape(x) of a spatial x, or a vector computed from it: a reshape target that follows x's band (entries null: not modelled). */
  | { kind: 'shape'; entries: Sym[] | null }
  /** Depends on every position: the output of a nonlocal or unanalysed op. */
  | { kind: 'mixed'; origin: string };

export type FindingKind = 'nonlocal' | 'unanalysed';

/** An op that breaks the finite-receptive-field argument. */
export interface Finding {
  kind: FindingKind;
  node: string;
  op: string;
  reason: string;
}

/** A node that grows the receptive field or changes the resolution. */
export interface Growth {
  node: string;
  op: string;
  /** Depth added at each edge by this node, in rows/columns of its output (before earlier depth is rescaled). */
  added: Depth;
  /** Resolution of the output relative to the input, when the node resamples. */
  resample?: Scale;
  scaleAfter: Scale;
}

export interface StageValue {
  name: string;
  scale: Scale;
  /** Halo of this value for the stage's halo, in its own rows and columns. */
  haloRows: number;
  haloCols: number;
}

/** One stage of a locality report: its nodes, inputs and outputs with their row layout, and the halo it needs. */
export interface StageLocality {
  index: number;
  nodes: { first: string; last: string; count: number };
  inputs: StageValue[];
  /** Stage outputs, with the depth of wrong values at a cut edge before cropping. */
  outputs: (StageValue & { depth: Depth })[];
  /** Halo in latent rows / columns (exact ratios); null when the stage has findings. */
  halo: { rows: Ratio; cols: Ratio } | null;
  growth: Growth[];
  findings: Finding[];
}

export interface RegionLocality {
  kind: SyncRegion['kind'];
  name: string;
  description: string;
  inputs: string[];
  output: string;
  nodes: string[];
}

/** What the locality analysis found in a decoder graph: its scale, the stages and their halos, the nonlocal ops, and whether row sharding and exact tiles are possible. */
export interface LocalityReport {
  graph: string;
  input: string;
  output: string;
  /** Output resolution relative to the input (the spatial compression ratio). */
  outputScale: Scale;
  /** Steps in graph order: stage indices and region names. */
  order: ({ kind: 'stage'; index: number } | { kind: 'region'; name: string })[];
  stages: StageLocality[];
  regions: RegionLocality[];
  /** Every op that rules out halo-exact tiling: sync regions, then unmarked findings. */
  nonlocal: { kind: 'sync-region' | FindingKind; op: string; node: string; reason: string }[];
  /** Halo-exact tiling: the latent halo when the whole graph is local. */
  exactTiling: { possible: true; halo: { rows: number; cols: number } } | { possible: false; blockers: string[] };
  /** Row sharding: every nonlocal op is a sync region and every stage has a halo. */
  sharding: { possible: boolean; blockers: string[] };
  /** Layout of every value that crosses a step boundary (what a sharded run slices and exchanges). */
  values: Map<string, SpatialFact>;
}

const NO_DEPTH: Depth = { top: 0, bottom: 0, left: 0, right: 0 };

function maxDepth(a: Depth, b: Depth): Depth {
  return {
    top: Math.max(a.top, b.top),
    bottom: Math.max(a.bottom, b.bottom),
    left: Math.max(a.left, b.left),
    right: Math.max(a.right, b.right),
  };
}

function sameLayout(a: SpatialFact, b: SpatialFact): boolean {
  return (
    a.rank === b.rank &&
    a.rowAxis === b.rowAxis &&
    a.colAxis === b.colAxis &&
    a.frameAxis === b.frameAxis &&
    equalRatio(a.scale.rows, b.scale.rows) &&
    equalRatio(a.scale.cols, b.scale.cols)
  );
}

function isSpatialAxis(f: SpatialFact, axis: number): boolean {
  return axis === f.rowAxis || axis === f.colAxis;
}

const hasMargin = (f: SpatialFact): boolean => !!f.margin && Object.values(f.margin).some((m) => m > 0);

/** The symbol of a value's frame count. */
const frameSymbol = (f: SpatialFact): string => (f.frames ? `F(${f.frames.a},${f.frames.b})` : 'F(?)');

function symProduct(list: readonly Sym[]): Sym {
  let coef = ONE;
  const syms: string[] = [];
  for (const e of list) {
    coef = mulRatio(coef, e.coef);
    syms.push(...e.syms);
  }
  return { coef, syms: syms.sort() };
}

function sameSym(a: Sym, b: Sym): boolean {
  return equalRatio(a.coef, b.coef) && a.syms.length === b.syms.length && a.syms.every((s, i) => s === b.syms[i]);
}

const isSubset = (a: readonly string[], b: readonly string[]): boolean => {
  const rest = [...b];
  return a.every((s) => {
    const i = rest.indexOf(s);
    if (i < 0) return false;
    rest.splice(i, 1);
    return true;
  });
};

/**
 * What each axis of x holds, as symbols, outer to inner: rows (H) and columns (W) at x's scale,
 * frames, the batch (axis 0), known sizes; a token axis holds its parts (frames, rows, columns).
 */
function axisParts(x: SpatialFact, node: string): Sym[][] {
  return Array.from({ length: x.rank }, (_, a) => {
    const rows: Sym = { coef: x.scale.rows, syms: ['H'] };
    const cols: Sym = { coef: x.scale.cols, syms: ['W'] };
    const frames: Sym = { coef: ONE, syms: [frameSymbol(x)] };
    if (a === x.rowAxis) return x.colAxis !== null ? [rows] : x.frameAxis === a ? [frames, rows, cols] : [rows, cols];
    if (a === x.colAxis) return [cols];
    if (a === x.frameAxis) return [frames];
    if (a === 0) return [{ coef: ONE, syms: ['B'] }];
    const d = x.dims[a];
    return [d == null ? { coef: ONE, syms: [`U:${node}:${a}`] } : { coef: ratio(d), syms: [] }];
  });
}

/**
 * Axes of a reshape matched group by group (each input group and output group hold the same
 * product): the side whose product is a strict factor of the other's grows. Null when no
 * such matching exists.
 */
function groupAxes(inp: readonly Sym[], out: readonly Sym[]): { i: number[]; o: number[] }[] | null {
  const groups: { i: number[]; o: number[] }[] = [];
  let i = 0;
  let j = 0;
  while (i < inp.length || j < out.length) {
    if (i >= inp.length || j >= out.length) return null;
    const gi = [i++];
    const go = [j++];
    for (;;) {
      const a = symProduct(gi.map((k) => inp[k]!));
      const b = symProduct(go.map((k) => out[k]!));
      if (sameSym(a, b)) break;
      const smaller = (x: Sym, y: Sym) => isSubset(x.syms, y.syms) && (x.syms.length < y.syms.length || compareRatio(x.coef, y.coef) < 0);
      if (smaller(b, a) && j < out.length) go.push(j++);
      else if (smaller(a, b) && i < inp.length) gi.push(i++);
      else return null;
    }
    groups.push({ i: gi, o: go });
  }
  return groups;
}

/** A scale as text: `8x`, or `8x4` when rows and columns differ. */
export function formatScale(s: Scale): string {
  return equalRatio(s.rows, s.cols) ? `${formatRatio(s.rows)}x` : `${formatRatio(s.rows)}x${formatRatio(s.cols)}`;
}

/** Abstract interpretation of one node list. */
class Interpreter {
  readonly facts = new Map<string, Fact>();
  readonly findings: Finding[] = [];
  readonly growth: Growth[] = [];
  private readonly literals = new Map<string, TensorProto>();

  constructor(model: ModelProto) {
    const graph = model.graph!;
    for (const t of graph.initializer ?? []) {
      this.facts.set(t.name!, { kind: 'const', dims: (t.dims ?? []).map(Number) });
      this.literals.set(t.name!, t);
    }
    for (const input of graph.input ?? []) {
      const dims = input.type?.tensor_type?.shape?.dim?.map((d) => (d.dim_value !== undefined ? Number(d.dim_value) : null)) ?? [
        null,
        null,
        null,
        null,
      ];
      if (dims.length !== 4 && dims.length !== 5)
        throw new DistVaeError(
          'UNSUPPORTED',
          `graph input ${input.name} has rank ${dims.length}; the locality analysis reads (batch, channels, height, width) images or (batch, channels, frames, height, width) videos`,
        );
      const video = dims.length === 5;
      this.facts.set(input.name!, {
        kind: 'spatial',
        rank: dims.length,
        rowAxis: video ? 3 : 2,
        colAxis: video ? 4 : 3,
        scale: { rows: ONE, cols: ONE },
        dims: video ? [dims[0]!, dims[1]!, null, null, null] : [dims[0]!, dims[1]!, null, null],
        depth: NO_DEPTH,
        frameAxis: video ? 2 : null,
        frames: video ? { a: 1, b: 0 } : null,
      });
    }
  }

  fact(name: string): Fact {
    const f = this.facts.get(name);
    if (!f) throw new DistVaeError('INVALID_ARGUMENT', `value ${name} is read before any node produces it`);
    return f;
  }

  /** The values of a literal input (a Constant node's or an initializer's), or undefined. */
  private literal(name: string | undefined): number[] | undefined {
    if (!name) return undefined;
    const t = this.literals.get(name);
    return t ? tensorProtoValues(t) : undefined;
  }

  run(node: NodeProto): void {
    const outputs = (node.output ?? []).filter((o) => o);
    const result = this.interpret(node);
    for (const o of outputs) this.facts.set(o, result);
  }

  private flag(node: NodeProto, kind: FindingKind, reason: string): Fact {
    this.findings.push({ kind, node: node.name ?? '', op: node.op_type ?? '', reason });
    return { kind: 'mixed', origin: node.name ?? '' };
  }

  private interpret(node: NodeProto): Fact {
    const op = node.op_type ?? '';
    const rule = opRule(op)?.locality ?? 'unmodelled';
    if (rule === 'literal') {
      const t = tensorAttribute(node, 'value');
      if (t && node.output?.[0]) this.literals.set(node.output[0], t);
      return { kind: 'const', dims: t ? (t.dims ?? []).map(Number) : null };
    }
    const names = node.input ?? [];
    const ins = names.map((n) => (n ? this.fact(n) : undefined));
    const mixed = ins.find((f): f is Extract<Fact, { kind: 'mixed' }> => f?.kind === 'mixed');
    if (mixed) return mixed;
    const spatial = ins.filter((f): f is SpatialFact => f?.kind === 'spatial');
    if (rule === 'shape') return spatial.length > 0 ? this.shapeOf(node, spatial[0]!) : { kind: 'const', dims: null };
    if (spatial.length === 0 && !ins.some((f) => f?.kind === 'shape')) return { kind: 'const', dims: this.constDims(node, ins) };
    if (spatial.length === 0) return this.shapeArithmetic(node, ins, names);
    const x = spatial[0];
    // Padding rows beyond the band are only read by the Conv that consumes them (a padded conv).
    if (spatial.some(hasMargin) && rule !== 'conv')
      return this.flag(node, 'unanalysed', `${op} of a value padded along its spatial axes (only a Conv may read the padding)`);
    if (rule === 'pointwise')
      return x && ins[0]?.kind === 'spatial' && spatial.length === 1
        ? x
        : this.flag(node, 'unanalysed', `${op} with a position-dependent parameter`);
    if (rule === 'elementwise') return this.elementwise(node, ins);
    if (!x) return this.flag(node, 'unanalysed', `${op} with a shape computed from a band`);
    switch (rule) {
      case 'conv':
        return this.conv(node, x, ins);
      case 'resize':
        return this.resize(node, x);
      case 'depth-to-space':
        return this.depthToSpace(node, x);
      case 'batch-norm':
        return spatial.length === 1 && !isSpatialAxis(x, 1) ? x : this.flag(node, 'unanalysed', 'BatchNormalization over a spatial axis');
      case 'reshape':
        return this.reshape(node, x, names[1]);
      case 'transpose':
        return this.transpose(node, x);
      case 'matmul':
        return this.matMul(node, ins);
      case 'softmax': {
        const axis = normaliseAxis(intAttribute(node, 'axis', -1), x.rank);
        return isSpatialAxis(x, axis) ? this.flag(node, 'nonlocal', `${op} over positions (axis ${axis})`) : x;
      }
      case 'layer-norm': {
        const axis = normaliseAxis(intAttribute(node, 'axis', -1), x.rank);
        return x.rowAxis >= axis || (x.colAxis ?? -1) >= axis
          ? this.flag(node, 'nonlocal', `LayerNormalization statistics over positions (axes ${axis}…)`)
          : x;
      }
      case 'concat':
        return this.concat(node, ins);
      case 'split':
        return this.split(node, x);
      case 'slice':
        return this.slice(node, x, names);
      case 'pad':
        return this.pad(node, x, names[1]);
      case 'unsqueeze':
        return this.unsqueeze(node, x, names[1]);
      case 'statistics':
        return this.flag(node, 'nonlocal', `${op}: statistics over every position`);
      case 'reduction':
        return this.reduce(node, x, names[1]);
      default:
        return this.flag(node, 'unanalysed', `${op} is not modelled by the locality analysis`);
    }
  }

  /** Shape(x) (with its start and end attributes) as symbols, one entry per axis. */
  private shapeOf(node: NodeProto, x: SpatialFact): Fact {
    const entries = axisParts(x, node.name ?? '').map(symProduct);
    const start = normaliseAxis(intAttribute(node, 'start', 0), x.rank);
    const end = node.attribute?.some((a) => a.name === 'end') ? normaliseAxis(intAttribute(node, 'end', x.rank), x.rank + 1) : x.rank;
    return { kind: 'shape', entries: entries.slice(start, end) };
  }

  /**
   * Shape vectors computed from shapes: slices, concatenations with literals and products by
   * literals (how a graph spells a reshape target that follows the band). Other ops on shapes are unanalysed.
   */
  private shapeArithmetic(node: NodeProto, ins: (Fact | undefined)[], names: string[]): Fact {
    const op = node.op_type ?? '';
    const entries = (i: number): Sym[] | null => {
      const f = ins[i];
      if (f?.kind === 'shape') return f.entries;
      const values = this.literal(names[i]);
      return values ? values.map((v) => ({ coef: ratio(v), syms: [] })) : null;
    };
    const unknown: Fact = { kind: 'shape', entries: null };
    if (op === 'Slice') {
      const e = entries(0);
      const [start, end] = [this.literal(names[1])?.[0], this.literal(names[2])?.[0]];
      const axes = names[3] ? this.literal(names[3]) : [0];
      if (
        !e ||
        start === undefined ||
        end === undefined ||
        axes?.length !== 1 ||
        axes[0] !== 0 ||
        (names[4] && this.literal(names[4])?.[0] !== 1)
      )
        return unknown;
      const clamp = (v: number) => Math.max(0, Math.min(e.length, v < 0 ? v + e.length : v));
      return { kind: 'shape', entries: e.slice(clamp(start), clamp(end)) };
    }
    if (op === 'Concat' && intAttribute(node, 'axis', 0) === 0) {
      const parts = names.map((_, i) => entries(i));
      return parts.every((p) => p !== null) ? { kind: 'shape', entries: parts.flatMap((p) => p!) } : unknown;
    }
    if (op === 'Mul') {
      const [a, b] = [entries(0), entries(1)];
      if (!a || !b || (a.length !== b.length && a.length !== 1 && b.length !== 1)) return unknown;
      const n = Math.max(a.length, b.length);
      const at = (e: Sym[], i: number) => e[e.length === 1 ? 0 : i]!;
      return { kind: 'shape', entries: Array.from({ length: n }, (_, i) => symProduct([at(a, i), at(b, i)])) };
    }
    return this.flag(node, 'unanalysed', `${op} with a shape computed from a band`);
  }

  /**
   * A Pad: of frames or channels, positions are untouched (frames change count); of the rows
   * or columns (constant or edge mode), the padding becomes the value's margin, which only the
   * Conv that reads it consumes — at a cut edge the padded rows are wrong, as zero padding is.
   */
  private pad(node: NodeProto, x: SpatialFact, padsName: string | undefined): Fact {
    const pads = this.literal(padsName);
    if (!pads) return this.flag(node, 'unanalysed', 'Pad with computed pads');
    const r = pads.length / 2;
    const spatial = [x.rowAxis, x.colAxis].some((a) => a !== null && (pads[a] !== 0 || pads[a + r] !== 0));
    let frames = x.frames;
    if (x.frameAxis !== null && x.frameAxis !== x.rowAxis && frames)
      frames = { a: frames.a, b: frames.b + pads[x.frameAxis]! + pads[x.frameAxis + r]! };
    if (!spatial) return { ...x, frames };
    const mode = stringAttribute(node, 'mode', 'constant');
    if (x.colAxis === null || (mode !== 'constant' && mode !== 'edge'))
      return this.flag(node, 'unanalysed', `Pad mode=${mode} of a spatial axis (constant or edge padding of rows and columns is modelled)`);
    const m = x.margin ?? NO_DEPTH;
    return {
      ...x,
      frames,
      margin: {
        top: m.top + pads[x.rowAxis]!,
        bottom: m.bottom + pads[x.rowAxis + r]!,
        left: m.left + pads[x.colAxis]!,
        right: m.right + pads[x.colAxis + r]!,
      },
    };
  }

  /** Dims of an op on constants, where they are easy to know (for broadcasting checks). */
  private constDims(node: NodeProto, ins: (Fact | undefined)[]): number[] | null {
    const rule = opRule(node.op_type)?.locality;
    const dimsOf = (f: Fact | undefined) => (f?.kind === 'const' ? f.dims : null);
    const first = dimsOf(ins[0]);
    if (rule === 'pointwise') return first;
    if (rule === 'elementwise') {
      const all = ins.filter((f) => f !== undefined).map(dimsOf);
      if (all.some((d) => d === null)) return null;
      const rank = Math.max(...all.map((d) => d!.length));
      return Array.from({ length: rank }, (_, i) => Math.max(...all.map((d) => d![i - (rank - d!.length)] ?? 1)));
    }
    if (rule === 'reshape' && first) {
      const target = this.literal(node.input?.[1]);
      if (!target) return null;
      const total = first.reduce((a, b) => a * b, 1);
      const out = target.map((t, i) => (t === 0 ? first[i]! : t));
      const known = out.filter((d) => d !== -1).reduce((a, b) => a * b, 1);
      return out.map((d) => (d === -1 ? total / known : d));
    }
    if (rule === 'transpose' && first) {
      const perm = intsAttribute(node, 'perm') ?? first.map((_, i) => first.length - 1 - i);
      return perm.map((p) => first[p]!);
    }
    // Kernels assembled in the graph from padded literals (HunyuanImage's 4×4 space-to-depth kernels).
    if (rule === 'pad' && first) {
      const pads = this.literal(node.input?.[1]);
      return pads && pads.length === 2 * first.length ? first.map((d, i) => d + pads[i]! + pads[i + first.length]!) : null;
    }
    if (rule === 'concat') {
      const all = ins.filter((f) => f !== undefined).map(dimsOf);
      if (all.length === 0 || all.some((d) => d === null || d.length !== all[0]!.length)) return null;
      const axis = normaliseAxis(intAttribute(node, 'axis', 0), all[0]!.length);
      return all[0]!.map((d, i) => (i === axis ? all.reduce((n, a) => n + a![i]!, 0) : d));
    }
    // Kernels computed in the graph (the polyphase upsampler's phase kernels: rows · W · colsᵀ).
    const second = dimsOf(ins[1]);
    if (rule === 'matmul' && first && second && first.length >= 2 && second.length >= 2) {
      const batchA = first.slice(0, -2);
      const batchB = second.slice(0, -2);
      const rank = Math.max(batchA.length, batchB.length);
      const batch = Array.from({ length: rank }, (_, i) =>
        Math.max(batchA[i - (rank - batchA.length)] ?? 1, batchB[i - (rank - batchB.length)] ?? 1),
      );
      return [...batch, first[first.length - 2]!, second[second.length - 1]!];
    }
    return null;
  }

  private elementwise(node: NodeProto, ins: (Fact | undefined)[]): Fact {
    const spatial = ins.filter((f): f is SpatialFact => f?.kind === 'spatial');
    const x = spatial[0]!;
    if (spatial.some((s) => !sameLayout(s, x)))
      return this.flag(node, 'unanalysed', `${node.op_type} of values at different positions or resolutions`);
    let depth = x.depth;
    for (const s of spatial) depth = maxDepth(depth, s.depth);
    let rank = x.rank;
    for (const f of ins) {
      if (f?.kind !== 'const') continue;
      if (f.dims === null)
        return this.flag(node, 'unanalysed', `${node.op_type} with an operand of unknown shape (it could vary with position)`);
      rank = Math.max(rank, f.dims.length);
    }
    const shift = rank - x.rank;
    for (const f of ins) {
      if (f?.kind !== 'const' || f.dims === null) continue;
      for (const axis of [x.rowAxis, x.colAxis]) {
        if (axis === null) continue;
        const i = axis + shift - (rank - f.dims.length);
        if (i >= 0 && f.dims[i] !== 1)
          return this.flag(
            node,
            'unanalysed',
            `${node.op_type} with an operand that varies along the spatial axis ${axis} (position-dependent)`,
          );
      }
    }
    // Known sizes from any operand of the full rank (one may know a size another lost).
    const dims = Array.from({ length: rank }, (_, i) => {
      for (const s of spatial) {
        const d = s.dims[i - (rank - s.rank)];
        if (d != null) return d;
      }
      return null;
    });
    return {
      ...x,
      rank,
      rowAxis: x.rowAxis + shift,
      colAxis: x.colAxis === null ? null : x.colAxis + shift,
      frameAxis: x.frameAxis === null ? null : x.frameAxis + shift,
      dims,
      depth,
    };
  }

  private conv(node: NodeProto, x: SpatialFact, ins: (Fact | undefined)[]): Fact {
    const w = ins[1];
    // A 2-D kernel over (B, C, H, W), or a 3-D one over (B, C, F, H, W) whose time axis is the frames (never split).
    const video = x.rank === 5 && x.frameAxis === 2;
    if (w?.kind !== 'const' || !w.dims || w.dims.length !== (video ? 5 : 4) || ins[2]?.kind === 'spatial')
      return this.flag(node, 'unanalysed', `Conv whose weight is not a ${video ? 3 : 2}-D kernel literal`);
    if ((x.rank !== 4 && !video) || x.rowAxis !== x.rank - 2 || x.colAxis !== x.rank - 1)
      return this.flag(node, 'unanalysed', 'Conv over axes other than the rows and columns');
    if (stringAttribute(node, 'auto_pad', 'NOTSET') !== 'NOTSET') return this.flag(node, 'unanalysed', 'Conv with auto_pad');
    const n = w.dims.length - 2;
    const kernel = w.dims.slice(2);
    const pads = intsAttribute(node, 'pads') ?? Array.from({ length: 2 * n }, () => 0);
    const strides = intsAttribute(node, 'strides') ?? Array.from({ length: n }, () => 1);
    const dilations = intsAttribute(node, 'dilations') ?? Array.from({ length: n }, () => 1);
    // A margin (an earlier Pad's rows beyond the band) acts as this conv's own padding.
    const margin = x.margin ?? NO_DEPTH;
    const extra = [
      [margin.top, margin.bottom],
      [margin.left, margin.right],
    ] as const;
    let frames = x.frames;
    if (video && frames) {
      const reach = dilations[0]! * (kernel[0]! - 1);
      // A stride s in time (an encoder's temporal down-sampler) maps P padded frames to
      // (P − reach − 1)/s + 1: still affine in F, with fractional coefficients (exact binary
      // fractions for s = 2); a frame count that is not whole for the F given is refused (plan.ts framesOf).
      const s = strides[0]!;
      frames = { a: frames.a / s, b: (frames.b + pads[0]! + pads[n]! - reach - 1) / s + 1 };
    }
    const axis = (spatialIndex: 0 | 1, before: number, after: number) => {
      const i = n - 2 + spatialIndex;
      const reach = dilations[i]! * (kernel[i]! - 1);
      const s = strides[i]!;
      const begin = pads[i]! + extra[spatialIndex][0];
      const total = begin + pads[i + n]! + extra[spatialIndex][1];
      // Output position j covers input [s·j, s·j + s) only when the size maps one to one.
      if (total > reach || total < reach + 1 - s) return null;
      return { before: Math.ceil((before + begin) / s), after: Math.max(0, Math.ceil((after + reach - begin - s + 1) / s)), stride: s };
    };
    const rows = axis(0, x.depth.top, x.depth.bottom);
    const cols = axis(1, x.depth.left, x.depth.right);
    if (!rows || !cols)
      return this.flag(
        node,
        'unanalysed',
        `Conv pads [${pads.join(',')}]${hasMargin(x) ? ' after a Pad' : ''} with kernel ${kernel.join('x')} change the spatial size: positions do not map one to one`,
      );
    const scale = { rows: divRatio(x.scale.rows, ratio(rows.stride)), cols: divRatio(x.scale.cols, ratio(cols.stride)) };
    const depth = { top: rows.before, bottom: rows.after, left: cols.before, right: cols.after };
    const resampled = rows.stride !== 1 || cols.stride !== 1;
    if (kernel.slice(-2).some((k) => k > 1) || resampled) {
      this.growth.push({
        node: node.name ?? '',
        op: 'Conv',
        added: {
          top: depth.top - Math.ceil(x.depth.top / rows.stride),
          bottom: depth.bottom - Math.ceil(x.depth.bottom / rows.stride),
          left: depth.left - Math.ceil(x.depth.left / cols.stride),
          right: depth.right - Math.ceil(x.depth.right / cols.stride),
        },
        ...(resampled ? { resample: { rows: ratio(1, rows.stride), cols: ratio(1, cols.stride) } } : {}),
        scaleAfter: scale,
      });
    }
    const { margin: _padded, ...rest } = x;
    const dims = video ? [x.dims[0]!, w.dims[0]!, null, null, null] : [x.dims[0]!, w.dims[0]!, null, null];
    return { ...rest, scale, dims, depth, frames };
  }

  private upsampled(node: NodeProto, x: SpatialFact, fy: Ratio, fx: Ratio, channels: number | null): Fact {
    const grow = (d: number, f: Ratio) => Math.ceil((d * f.num) / f.den);
    const scale = { rows: mulRatio(x.scale.rows, fy), cols: mulRatio(x.scale.cols, fx) };
    this.growth.push({
      node: node.name ?? '',
      op: node.op_type ?? '',
      added: NO_DEPTH,
      resample: { rows: fy, cols: fx },
      scaleAfter: scale,
    });
    return {
      ...x,
      scale,
      dims: x.dims.map((d, i) => (i === 1 ? channels : i === 0 ? d : null)),
      depth: { top: grow(x.depth.top, fy), bottom: grow(x.depth.bottom, fy), left: grow(x.depth.left, fx), right: grow(x.depth.right, fx) },
    };
  }

  private resize(node: NodeProto, x: SpatialFact): Fact {
    const mode = stringAttribute(node, 'mode', 'nearest');
    const transform = stringAttribute(node, 'coordinate_transformation_mode', 'half_pixel');
    const nearest = stringAttribute(node, 'nearest_mode', 'round_prefer_floor');
    const literal = this.literal(node.input?.[2]);
    // (B, C, F, H, W): a whole factor on the frames repeats each frame (frames are never split), the rest as for images.
    const video = x.rank === 5 && x.frameAxis === 2 && x.rowAxis === 3 && x.colAxis === 4;
    const ft = video && literal?.length === 5 ? literal[2]! : 1;
    const scales = video && literal?.length === 5 ? [literal[0]!, literal[1]!, literal[3]!, literal[4]!] : literal;
    if (
      (!video && (x.rank !== 4 || x.rowAxis !== 2 || x.colAxis !== 3)) ||
      !scales ||
      scales.length !== 4 ||
      !Number.isInteger(ft) ||
      ft < 1
    )
      return this.flag(node, 'unanalysed', 'Resize without literal scales over (batch, channels, [frames,] rows, columns)');
    const [sb, sc, fy, fx] = scales as [number, number, number, number];
    // With whole factors, 'asymmetric'+'floor' and 'half_pixel'+'round_prefer_*' both read source row ⌊i/f⌋.
    const floorMapping =
      (transform === 'asymmetric' && nearest === 'floor') || (transform === 'half_pixel' && nearest.startsWith('round_prefer'));
    const whole = (f: number) => Number.isInteger(f) && f >= 1;
    if (mode !== 'nearest' || !floorMapping || sb !== 1 || !whole(sc) || !whole(fy) || !whole(fx)) {
      return this.flag(
        node,
        'unanalysed',
        `Resize mode=${mode} coordinate_transformation_mode=${transform} nearest_mode=${nearest} scales [${scales.join(',')}]: only whole-factor nearest upsampling is modelled`,
      );
    }
    // A whole factor on the channel axis repeats each channel in place (PyTorch's repeat_interleave): positions are untouched.
    const channels = x.dims[1] == null ? null : x.dims[1] * sc;
    const frames = x.frames && { a: x.frames.a * ft, b: x.frames.b * ft };
    if (fy === 1 && fx === 1) return { ...x, frames, dims: x.dims.map((d, i) => (i === 1 ? channels : d)) };
    return { ...(this.upsampled(node, x, ratio(fy), ratio(fx), channels) as SpatialFact), frames };
  }

  private depthToSpace(node: NodeProto, x: SpatialFact): Fact {
    const b = intAttribute(node, 'blocksize', 0);
    if (x.rank !== 4 || x.rowAxis !== 2 || x.colAxis !== 3 || b < 1)
      return this.flag(node, 'unanalysed', `${node.op_type} over axes other than the rows and columns`);
    const c = x.dims[1];
    return this.upsampled(node, x, ratio(b), ratio(b), c == null ? null : c / (b * b));
  }

  private reshape(node: NodeProto, x: SpatialFact, targetName: string | undefined): Fact {
    const targetFact = targetName ? this.facts.get(targetName) : undefined;
    if (targetFact?.kind === 'shape') {
      if (!targetFact.entries) return this.flag(node, 'unanalysed', 'Reshape to a shape computed in a way the analysis does not model');
      return this.reshapeTo(node, x, targetFact.entries);
    }
    const target = this.literal(targetName);
    const c = x.dims[1];
    // (B, C, F, H, W) → (B, C, F·H·W): tokens, frame-major then row-major, so each frame's rows stay contiguous.
    if (
      target &&
      target.length === 3 &&
      target[0] === 0 &&
      target[2] === -1 &&
      x.rank === 5 &&
      x.frameAxis === 2 &&
      x.rowAxis === 3 &&
      x.colAxis === 4 &&
      c != null &&
      target[1] === c
    ) {
      return { ...x, rank: 3, rowAxis: 2, colAxis: null, frameAxis: 2, dims: [x.dims[0]!, c, null] };
    }
    // (B, C, H, W) → (B, C, H·W): tokens, row-major, so rows stay contiguous.
    if (
      target &&
      target.length === 3 &&
      target[0] === 0 &&
      target[2] === -1 &&
      x.rank === 4 &&
      x.rowAxis === 2 &&
      x.colAxis === 3 &&
      c != null &&
      target[1] === c
    ) {
      return { ...x, rank: 3, colAxis: null, dims: [x.dims[0]!, c, null] };
    }
    // (B, C, N) tokens ↔ (B·G, C/G, N) heads (target [-1, k, 0]): batch and channels regroup, the token axis is untouched.
    if (
      target &&
      target.length === 3 &&
      target[0] === -1 &&
      target[1]! > 0 &&
      target[2] === 0 &&
      x.rank === 3 &&
      x.rowAxis === 2 &&
      x.colAxis === null
    ) {
      return { ...x, dims: [null, target[1]!, null] };
    }
    return this.flag(node, 'unanalysed', `Reshape${target ? ` to [${target.join(',')}]` : ''} merges positions with other axes`);
  }

  /**
   * A Reshape to a computed shape, matched axis group by axis group (groupAxes): untouched
   * axes, channels regrouped, frames, rows and columns flattened into tokens (or tokens split
   * back), and a row, column or frame axis merged with constant factors inside it — a whole
   * factor interleave, i.e. an upsampling by that factor (how a channel-to-space rearrangement
   * lands). Anything that moves rows into another axis is unanalysed.
   */
  private reshapeTo(node: NodeProto, x: SpatialFact, target: readonly Sym[]): Fact {
    const parts = axisParts(x, node.name ?? '');
    const groups = groupAxes(parts.map(symProduct), target);
    const refuse = (why: string) => this.flag(node, 'unanalysed', `Reshape to a computed shape ${why}`);
    if (!groups) return refuse('that does not match the input axis group by axis group');
    let rowAxis: number | null = null;
    let colAxis: number | null = null;
    let frameAxis: number | null = null;
    let frames = x.frames;
    const scale = { ...x.scale };
    const depth = { ...x.depth };
    const grown = { rows: ONE, cols: ONE };
    for (const g of groups) {
      const has = (a: number | null) => a !== null && g.i.includes(a);
      if (!has(x.rowAxis) && !has(x.colAxis) && !has(x.frameAxis)) continue;
      if (g.i.length === 1 && g.o.length === 1) {
        const [a, o] = [g.i[0]!, g.o[0]!];
        if (a === x.rowAxis) rowAxis = o;
        if (a === x.colAxis) colAxis = o;
        if (a === x.frameAxis) frameAxis = o;
        continue;
      }
      if (g.o.length === 1) {
        const o = g.o[0]!;
        if (has(x.rowAxis) && has(x.colAxis)) {
          const order = x.frameAxis !== null && has(x.frameAxis) ? [x.frameAxis, x.rowAxis, x.colAxis] : [x.rowAxis, x.colAxis!];
          if (g.i.join() !== order.join()) return refuse('that flattens positions out of (frame, row, column) order');
          rowAxis = o;
          if (has(x.frameAxis)) frameAxis = o;
          continue;
        }
        // Axes of size 1 are neutral wherever they sit.
        const unit = (a: number) => parts[a]!.length === 1 && parts[a]![0]!.syms.length === 0 && equalRatio(parts[a]![0]!.coef, ONE);
        const [first, ...inner] = g.i.filter((a) => !unit(a)) as [number, ...number[]];
        const factors = inner.map((a) => parts[a]!);
        if (factors.some((p) => p.length !== 1 || p[0]!.syms.length > 0)) return refuse('that merges positions with another axis');
        const k = factors.reduce((n, p) => n * (p[0]!.coef.num / p[0]!.coef.den), 1);
        if (first === x.rowAxis && x.colAxis !== null) {
          rowAxis = o;
          scale.rows = mulRatio(scale.rows, ratio(k));
          grown.rows = ratio(k);
          depth.top *= k;
          depth.bottom *= k;
        } else if (first === x.colAxis) {
          colAxis = o;
          scale.cols = mulRatio(scale.cols, ratio(k));
          grown.cols = ratio(k);
          depth.left *= k;
          depth.right *= k;
        } else if (first === x.frameAxis && x.frameAxis !== x.rowAxis) {
          frameAxis = o;
          frames = frames ? { a: frames.a * k, b: frames.b * k } : null;
        } else return refuse('that merges positions into an outer axis');
        continue;
      }
      if (g.i.length === 1 && g.i[0] === x.rowAxis && x.colAxis === null) {
        const expected = parts[x.rowAxis]!;
        if (g.o.length !== expected.length || !g.o.every((o, k) => sameSym(target[o]!, expected[k]!)))
          return refuse('that splits tokens into other than their (frame,) row and column axes');
        if (expected.length === 3) frameAxis = g.o[0]!;
        rowAxis = g.o[expected.length - 2]!;
        colAxis = g.o[expected.length - 1]!;
        continue;
      }
      return refuse('that splits a row, column or frame axis');
    }
    if (rowAxis === null) return refuse('that loses the row axis');
    if (!equalRatio(grown.rows, ONE) || !equalRatio(grown.cols, ONE))
      this.growth.push({ node: node.name ?? '', op: 'Reshape', added: NO_DEPTH, resample: grown, scaleAfter: scale });
    const dims = target.map((e, i) =>
      i === rowAxis || i === colAxis || i === frameAxis || e.syms.length > 0 || e.coef.den !== 1
        ? i === 0
          ? x.dims[0]!
          : null
        : e.coef.num,
    );
    return { ...x, rank: target.length, rowAxis, colAxis, frameAxis, frames, scale, depth, dims };
  }

  private transpose(node: NodeProto, x: SpatialFact): Fact {
    const perm = intsAttribute(node, 'perm') ?? Array.from({ length: x.rank }, (_, i) => x.rank - 1 - i);
    if (perm.length !== x.rank) return this.flag(node, 'unanalysed', 'Transpose with a permutation of another rank');
    return {
      ...x,
      rowAxis: perm.indexOf(x.rowAxis),
      colAxis: x.colAxis === null ? null : perm.indexOf(x.colAxis),
      frameAxis: x.frameAxis === null ? null : perm.indexOf(x.frameAxis),
      dims: perm.map((p) => x.dims[p]!),
    };
  }

  private matMul(node: NodeProto, ins: (Fact | undefined)[]): Fact {
    const [a, b] = ins;
    if (a?.kind === 'spatial' && b?.kind === 'spatial')
      return this.flag(node, 'nonlocal', 'MatMul of two position-dependent operands (scores between every pair of positions)');
    if (b?.kind === 'spatial' && a?.kind === 'const') {
      if (b.colAxis !== null || b.rowAxis === b.rank - 2) return this.flag(node, 'nonlocal', 'MatMul contracting over positions');
      const dims = [...b.dims];
      dims[b.rank - 2] = a.dims ? (a.dims[a.dims.length - 2] ?? null) : null;
      return { ...b, dims };
    }
    if (a?.kind === 'spatial' && b?.kind === 'const') {
      if (a.colAxis !== null || a.rowAxis === a.rank - 1) return this.flag(node, 'nonlocal', 'MatMul contracting over positions');
      const dims = [...a.dims];
      dims[a.rank - 1] = b.dims ? (b.dims[b.dims.length - 1] ?? null) : null;
      return { ...a, dims };
    }
    return this.flag(node, 'unanalysed', 'MatMul with a computed shape operand');
  }

  private concat(node: NodeProto, ins: (Fact | undefined)[]): Fact {
    const spatial = ins.filter((f): f is SpatialFact => f?.kind === 'spatial');
    const x = spatial[0]!;
    const axis = normaliseAxis(intAttribute(node, 'axis', 0), x.rank);
    if (spatial.length !== ins.length || spatial.some((s) => !sameLayout(s, x)) || isSpatialAxis(x, axis))
      return this.flag(node, 'unanalysed', `Concat along axis ${axis} of values with different layouts or along positions`);
    let depth = x.depth;
    for (const s of spatial) depth = maxDepth(depth, s.depth);
    const dims = [...x.dims];
    dims[axis] = spatial.every((s) => s.dims[axis] != null) ? spatial.reduce((n, s) => n + s.dims[axis]!, 0) : null;
    if (axis === x.frameAxis) {
      const frames = spatial.every((s) => s.frames)
        ? spatial.reduce((t, s) => ({ a: t.a + s.frames!.a, b: t.b + s.frames!.b }), { a: 0, b: 0 })
        : null;
      return { ...x, dims, depth, frames };
    }
    return { ...x, dims, depth };
  }

  private split(node: NodeProto, x: SpatialFact): Fact {
    const axis = normaliseAxis(intAttribute(node, 'axis', 0), x.rank);
    if (isSpatialAxis(x, axis)) return this.flag(node, 'unanalysed', 'Split along positions');
    const dims = [...x.dims];
    // Every output shares one fact: its size is known when the literal sizes are all equal.
    const sizes = this.literal(node.input?.[1]);
    dims[axis] = sizes && sizes.length > 0 && sizes.every((n) => n === sizes[0]) ? sizes[0]! : null;
    return { ...x, dims };
  }

  private slice(node: NodeProto, x: SpatialFact, names: string[]): Fact {
    const axes = names[3] ? this.literal(names[3]) : Array.from({ length: x.rank }, (_, i) => i);
    if (!axes) return this.flag(node, 'unanalysed', 'Slice with computed axes');
    if (axes.some((a) => isSpatialAxis(x, normaliseAxis(a, x.rank))))
      return this.flag(node, 'unanalysed', 'Slice of a spatial axis shifts positions');
    const dims = [...x.dims];
    const [starts, ends, steps] = [this.literal(names[1]), this.literal(names[2]), names[4] ? this.literal(names[4]) : undefined];
    axes.forEach((a, i) => {
      const axis = normaliseAxis(a, x.rank);
      const [start, end, step, size] = [starts?.[i], ends?.[i], steps?.[i] ?? 1, x.dims[axis]];
      // A literal slice of a known axis (channels) keeps a known size.
      dims[axis] =
        size != null && start !== undefined && end !== undefined && step === 1 && start >= 0 && end >= 0
          ? Math.max(0, Math.min(end, size) - start)
          : null;
    });
    const k = x.frameAxis === null ? -1 : axes.findIndex((a) => normaliseAxis(a, x.rank) === x.frameAxis);
    if (k < 0) return { ...x, dims };
    // Frames [start, end): a literal count when both bounds are literal and small, else all but the first `start`.
    const [start, end, step] = [this.literal(names[1])?.[k], this.literal(names[2])?.[k], names[4] ? this.literal(names[4])?.[k] : 1];
    let frames: Affine | null = null;
    if (x.frames && start !== undefined && end !== undefined && step === 1 && start >= 0) {
      frames = end >= Number.MAX_SAFE_INTEGER / 2 ? { a: x.frames.a, b: x.frames.b - start } : end >= 0 ? { a: 0, b: end - start } : null;
    }
    return { ...x, dims, frames };
  }

  private unsqueeze(node: NodeProto, x: SpatialFact, axesName: string | undefined): Fact {
    const axes = this.literal(axesName);
    if (!axes) return this.flag(node, 'unanalysed', 'Unsqueeze with computed axes');
    const rank = x.rank + axes.length;
    const inserted = new Set(axes.map((a) => normaliseAxis(a, rank)));
    const map: number[] = [];
    for (let i = 0; i < rank; i++) if (!inserted.has(i)) map.push(i);
    const dims: (number | null)[] = Array.from({ length: rank }, () => 1);
    map.forEach((to, from) => (dims[to] = x.dims[from]!));
    return {
      ...x,
      rank,
      rowAxis: map[x.rowAxis]!,
      colAxis: x.colAxis === null ? null : map[x.colAxis]!,
      frameAxis: x.frameAxis === null ? null : map[x.frameAxis]!,
      dims,
    };
  }

  private reduce(node: NodeProto, x: SpatialFact, axesName: string | undefined): Fact {
    const axes = (this.literal(axesName) ?? intsAttribute(node, 'axes') ?? []).map((a) => normaliseAxis(a, x.rank));
    if (axes.length === 0 || axes.some((a) => isSpatialAxis(x, a))) return this.flag(node, 'nonlocal', `${node.op_type} over positions`);
    if (intAttribute(node, 'keepdims', 1) === 1) return x;
    const keep = Array.from({ length: x.rank }, (_, i) => i).filter((i) => !axes.includes(i));
    const framesKept = x.frameAxis !== null && keep.includes(x.frameAxis);
    return {
      ...x,
      rank: keep.length,
      rowAxis: keep.indexOf(x.rowAxis),
      colAxis: x.colAxis === null ? null : keep.indexOf(x.colAxis),
      frameAxis: framesKept ? keep.indexOf(x.frameAxis!) : null,
      frames: framesKept ? x.frames : null,
      dims: keep.map((i) => x.dims[i]!),
    };
  }
}

function regionChecks(region: SyncRegion, facts: Interpreter['facts']): string | null {
  const spatial = (name: string) => {
    const f = facts.get(name);
    return f?.kind === 'spatial' ? f : null;
  };
  if (region.kind === 'group-norm') {
    const x = spatial(region.input);
    return x && x.rowAxis >= 2 && (x.colAxis === null || x.colAxis >= 2)
      ? null
      : `its input ${region.input} is not a (batch, channels, positions…) value`;
  }
  const axes = [
    [region.query, ATTENTION_TOKEN_AXES.query],
    [region.key, ATTENTION_TOKEN_AXES.key],
    [region.value, ATTENTION_TOKEN_AXES.value],
  ] as const;
  for (const [name, axis] of axes) {
    const f = spatial(name);
    if (!f || f.colAxis !== null || f.rowAxis !== axis || f.rank !== 3)
      return `${name} is not a (…) token tensor with positions on axis ${axis}`;
  }
  return null;
}

/** Output fact of a region from its inputs' facts: same positions, nothing wrong near edges. */
function regionOutput(region: SyncRegion, facts: Interpreter['facts']): SpatialFact {
  if (region.kind === 'group-norm') return { ...(facts.get(region.input) as SpatialFact), depth: NO_DEPTH };
  const q = facts.get(region.query) as SpatialFact;
  const v = facts.get(region.value) as SpatialFact;
  return {
    kind: 'spatial',
    rank: 3,
    rowAxis: ATTENTION_TOKEN_AXES.output,
    colAxis: null,
    scale: q.scale,
    dims: [q.dims[0]!, v.dims[1]!, null],
    depth: NO_DEPTH,
    frameAxis: q.frameAxis === null ? null : ATTENTION_TOKEN_AXES.output,
    frames: q.frames,
  };
}

function valueInfo(name: string, f: SpatialFact, halo: { rows: Ratio; cols: Ratio }): StageValue {
  return {
    name,
    scale: f.scale,
    haloRows: wholeTimes(1, mulRatio(halo.rows, f.scale.rows)),
    haloCols: f.colAxis === null ? 0 : wholeTimes(1, mulRatio(halo.cols, f.scale.cols)),
  };
}

/** The locality report of a built model (its sync regions read from its metadata). */
export function analyzeLocality(model: ModelProto): LocalityReport {
  const regions = syncRegionsOf(model);
  const io = graphIO(model);
  const segments: Segment[] = segmentGraph(model, regions);
  const interpreter = new Interpreter(model);
  const facts = interpreter.facts;
  const stages: StageLocality[] = [];
  const regionReports: RegionLocality[] = [];
  const order: LocalityReport['order'] = [];
  const values = new Map<string, SpatialFact>();
  const blockers: string[] = [];
  const produced = new Map<string, number>();
  segments.forEach((s, i) => s.nodes.forEach((n) => (n.output ?? []).forEach((o) => produced.set(o, i))));
  const crossing = new Set<string>([io.input, io.output]);
  segments.forEach((s, i) => {
    for (const n of s.nodes) for (const v of n.input ?? []) if (v && (produced.get(v) ?? -1) !== i && produced.has(v)) crossing.add(v);
  });

  for (const [i, segment] of segments.entries()) {
    if (segment.kind === 'region') {
      const r = segment.region;
      const problem = regionChecks(r, facts);
      if (problem) throw new DistVaeError('INVALID_ARGUMENT', `sync region ${r.name} (${r.kind}) disagrees with the graph: ${problem}`);
      const out = regionOutput(r, facts);
      facts.set(r.output, out);
      regionReports.push({
        kind: r.kind,
        name: r.name,
        description: describeRegion(r),
        inputs: regionInputs(r),
        output: r.output,
        nodes: r.nodes,
      });
      order.push({ kind: 'region', name: r.name });
      continue;
    }
    // Values computed by earlier steps arrive cropped to the band: nothing wrong near its edges.
    const external = new Set<string>();
    for (const n of segment.nodes)
      for (const v of n.input ?? []) if (v && produced.get(v) !== i && facts.get(v)?.kind === 'spatial') external.add(v);
    for (const v of external) facts.set(v, { ...(facts.get(v) as SpatialFact), depth: NO_DEPTH });
    const findingsBefore = interpreter.findings.length;
    const growthBefore = interpreter.growth.length;
    for (const n of segment.nodes) interpreter.run(n);
    const crossingOut = segment.nodes.flatMap((n) => n.output ?? []).filter((o) => crossing.has(o));
    for (const o of crossingOut) {
      const f = facts.get(o);
      if (f?.kind === 'spatial' && hasMargin(f))
        interpreter.findings.push({
          kind: 'unanalysed',
          node: o,
          op: 'Pad',
          reason: 'padding along a spatial axis leaves the stage (only a Conv may read the padding)',
        });
    }
    const findings = interpreter.findings.slice(findingsBefore);
    const growth = interpreter.growth.slice(growthBefore);
    const outputs = segment.nodes.flatMap((n) => n.output ?? []).filter((o) => crossing.has(o) && facts.get(o)?.kind === 'spatial');
    const inputFacts = [...external].map((n) => [n, facts.get(n) as SpatialFact] as const);
    const outputFacts = outputs.map((n) => [n, facts.get(n) as SpatialFact] as const);
    let halo: StageLocality['halo'] = null;
    if (findings.length === 0 && !outputs.some((o) => facts.get(o)?.kind === 'mixed')) {
      let rows = ZERO;
      let cols = ZERO;
      for (const [, f] of outputFacts) {
        rows = maxRatio(rows, divRatio(ratio(Math.max(f.depth.top, f.depth.bottom)), f.scale.rows));
        cols = maxRatio(cols, divRatio(ratio(Math.max(f.depth.left, f.depth.right)), f.scale.cols));
      }
      const all = [...inputFacts, ...outputFacts].map(([, f]) => f);
      halo = {
        rows: ceilToWholeRows(
          rows,
          all.map((f) => f.scale.rows),
        ),
        cols: ceilToWholeRows(
          cols,
          all.map((f) => f.scale.cols),
        ),
      };
    }
    const zero = { rows: ZERO, cols: ZERO };
    stages.push({
      index: segment.index,
      nodes: {
        first: segment.nodes[0]!.name ?? '',
        last: segment.nodes[segment.nodes.length - 1]!.name ?? '',
        count: segment.nodes.length,
      },
      inputs: inputFacts.map(([n, f]) => valueInfo(n, f, halo ?? zero)),
      outputs: outputFacts.map(([n, f]) => ({ ...valueInfo(n, f, halo ?? zero), depth: f.depth })),
      halo,
      growth,
      findings,
    });
    for (const f of findings) blockers.push(`${f.node} (${f.op}: ${f.reason})`);
    order.push({ kind: 'stage', index: segment.index });
  }
  for (const v of crossing) {
    const f = facts.get(v);
    if (f?.kind === 'spatial') values.set(v, f);
  }
  const outFact = facts.get(io.output);
  const outputScale = outFact?.kind === 'spatial' ? outFact.scale : { rows: ONE, cols: ONE };
  const nonlocal: LocalityReport['nonlocal'] = [
    ...regions.map((r) => ({
      kind: 'sync-region' as const,
      op: r.kind === 'group-norm' ? 'GroupNorm' : 'Attention',
      node: r.name,
      reason: describeRegion(r),
    })),
    ...stages.flatMap((s) => s.findings.map((f) => ({ kind: f.kind, op: f.op, node: f.node, reason: f.reason }))),
  ];
  // The graph input is at latent resolution, so a whole-graph halo is whole latent units.
  const whole = stages.length === 1 && regions.length === 0 ? stages[0]!.halo : null;
  const exactTiling: LocalityReport['exactTiling'] = whole
    ? { possible: true, halo: { rows: wholeTimes(1, whole.rows), cols: wholeTimes(1, whole.cols) } }
    : { possible: false, blockers: nonlocal.map((n) => `${n.node} (${n.op}: ${n.reason})`) };
  return {
    graph: model.graph?.name ?? '',
    input: io.input,
    output: io.output,
    outputScale,
    order,
    stages,
    regions: regionReports,
    nonlocal,
    exactTiling,
    sharding: { possible: blockers.length === 0, blockers },
    values,
  };
}
