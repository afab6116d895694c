// Synchronisation regions: the parts of a built graph that read information from every spatial
// position — GroupNorm (statistics over all of H×W per group) and attention (every query reads
// every key). The builder records each region as it appends its nodes; the finished model
// carries the list in its metadata_props, so locality analysis and staging read a ModelProto
// alone. A region is a contiguous run of nodes with named inputs and one output; the fused graph
// computes it as usual, a sharded run replaces it by collectives (docs/design.md §6).

import { DistVaeError } from '../errors.js';
import type { ModelProto } from './onnx-proto.js';

/** metadata_props key of the JSON list of regions. */
export const SYNC_REGIONS_KEY = 'distvae.sync_regions';

interface RegionBase {
  /** Module path of the op, e.g. `decoder.mid_block.resnets.0.norm1`. */
  name: string;
  /** Names of the region's nodes, in graph order (a contiguous run of the node list). */
  nodes: string[];
  output: string;
}

/** PyTorch GroupNorm of `input` ([B, C, …], statistics per (sample, group)), affine by the [C] initializers. */
export interface GroupNormRegion extends RegionBase {
  kind: 'group-norm';
  input: string;
  scale: string;
  bias: string;
  groups: number;
  epsilon: number;
}

/**
 * Single-head attention core, channel-major: `query` (B, Nq, C) already scaled, `key` and
 * `value` (B, C, Nk) → `output` (B, C, Nq) = value · softmax(query · key)ᵀ.
 */
export interface AttentionRegion extends RegionBase {
  kind: 'attention';
  /**
   * The core between the operands: softmax (absent, the default) or ReLU linear attention
   * (`relu-linear`: output = value · (keyᵀ·queryᵀ) normalised by the key sums, Scope.linearAttention).
   * Both read every key for every query, so a sharded run gathers keys and values alike.
   */
  form?: 'relu-linear';
  /**
   * A core that reads the keys and values only through a sum over positions (linear attention:
   * per head K·[V; 1]ᵀ, `heads` × `headDim` × (`headDim` + 1) per sample): `value` names that sum,
   * so a sharded run computes it per band and all-reduces it instead of gathering keys and values.
   */
  summary?: { value: string; heads: number; headDim: number };
  /**
   * A mask the core applies to its scores before the softmax: its nodes rewrite `scores` into
   * `masked`. `frame-causal` (HunyuanVideo's): query and key tokens are (frame, row, column)
   * frame-major with as many tokens per frame on each side, and a query of frame f reads the
   * keys of frames ≤ f only — so a sharded run drops the mask and runs the core on each query
   * frame with the keys of that frame and earlier (graph/stages.ts `frameCausal`). `custom`:
   * not modelled (row sharding refuses it).
   */
  mask?: { kind: 'frame-causal' | 'custom'; scores: string; masked: string };
  query: string;
  key: string;
  value: string;
}

export type SyncRegion = GroupNormRegion | AttentionRegion;

/** The token axis of each attention operand (the layout documented on AttentionRegion). */
export const ATTENTION_TOKEN_AXES = { query: 1, key: 2, value: 2, output: 2 } as const;

/** The values a region reads (initializers excluded). */
export function regionInputs(region: SyncRegion): string[] {
  return region.kind === 'group-norm' ? [region.input] : [region.query, region.key, region.value];
}

/** What the op computes, in words (for reports). */
export function describeRegion(region: SyncRegion): string {
  if (region.kind === 'group-norm') return `${region.groups} groups, statistics over every position`;
  if (region.form === 'relu-linear') return 'every query reads every position (ReLU linear attention)';
  return region.mask?.kind === 'frame-causal'
    ? 'every query attends to every position of its own and earlier frames'
    : 'every query attends to every position';
}

export function syncRegionsEntry(regions: readonly SyncRegion[]): { key: string; value: string } {
  return { key: SYNC_REGIONS_KEY, value: JSON.stringify(regions) };
}

/** The regions a model records (none for a model built without them). */
export function syncRegionsOf(model: ModelProto): SyncRegion[] {
  const entry = (model.metadata_props ?? []).find((p) => p.key === SYNC_REGIONS_KEY);
  if (!entry?.value) return [];
  try {
    return JSON.parse(entry.value) as SyncRegion[];
  } catch (cause) {
    throw new DistVaeError('FILE_INVALID', `the model's ${SYNC_REGIONS_KEY} metadata is not valid JSON`, { cause });
  }
}
