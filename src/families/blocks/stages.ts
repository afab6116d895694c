// A sequential network (one activation flowing from link to link) built as a chain of stage
// graphs cut by weight bytes, for runtime/staged-session.ts. An ONNX model is one protobuf
// message, capped at 2 GiB, and every weight held in memory (a page's, a caller's map, anything
// not file-backed) is embedded in it: a network with more float32 weights than that (LTX-2's
// encoder, 2.59 GiB) cannot be one model. The cut is planned from the parameter list alone
// (`planStages`: no weight is read or allocated), greedily in link order, so a network under the
// budget stays exactly one graph, the fused one.

import { DistVaeError } from '../../errors.js';
import { GraphBuilder, type Dim, type Value } from '../../graph/builder.js';
import { weightBytes, type ParamSpec } from '../../weights/synthetic.js';
import { Module, type ParamSource } from './blocks.js';

/**
 * Float32 weight bytes a stage may hold: half of protobuf's 2 GiB, so a stage's model stays well
 * under the limit and a build serialises at most this much at once.
 */
export const MAX_STAGE_WEIGHT_BYTES = 2 ** 30;

/** One link of a chain: the nodes that map the running activation, reading parameters under one module path. */
export interface ChainLink {
  /** The module path (checkpoint-key prefix) of every parameter it reads, e.g. `encoder.down_blocks.0.resnets.1`. */
  readonly path: string;
  /** Channels of its output: the activation handed to the next stage when a cut follows it. */
  readonly channels: number;
  /** Appends the link's nodes to `x`; `root` is the stage's module at the checkpoint root. */
  apply(root: Module, x: Value): Value;
}

/** One planned stage: the paths of its links, in order, and the float32 weight bytes they read. */
export interface StagePlan {
  readonly links: readonly string[];
  readonly bytes: number;
}

/**
 * Groups consecutive links into stages of at most `maxBytes` of float32 weights each (a link
 * larger than that on its own is a stage of its own: links are not split). Every parameter must
 * belong to one link (its name under the link's path), so a stage's bytes are exactly what its
 * graph embeds.
 */
export function planStages(paths: readonly string[], params: readonly ParamSpec[], maxBytes = MAX_STAGE_WEIGHT_BYTES): StagePlan[] {
  if (!(maxBytes > 0)) throw new DistVaeError('INVALID_ARGUMENT', `a stage's weight budget must be positive, got ${maxBytes}`);
  const bytes = new Map(paths.map((p) => [p, 0]));
  for (const spec of params) {
    const owner = paths.find((p) => spec.name.startsWith(`${p}.`));
    if (owner === undefined) throw new DistVaeError('INVALID_ARGUMENT', `parameter ${spec.name} lies under no link of the chain`);
    bytes.set(owner, bytes.get(owner)! + weightBytes([spec]));
  }
  const stages: { links: string[]; bytes: number }[] = [];
  for (const path of paths) {
    const b = bytes.get(path)!;
    const current = stages[stages.length - 1];
    if (current && current.bytes + b <= maxBytes) {
      current.links.push(path);
      current.bytes += b;
    } else {
      stages.push({ links: [path], bytes: b });
    }
  }
  return stages;
}

/** What a chain is built from: its links, where it is cut, its input and what its last stage outputs. */
export interface Chain {
  /** The model's name (one stage) or its stages' prefix. */
  readonly name: string;
  readonly docString: string;
  readonly input: { readonly name: string; readonly dims: readonly Dim[] };
  readonly links: readonly ChainLink[];
  /** Links per stage, in order (sums to links.length); one entry: the fused graph. */
  readonly stageSizes: readonly number[];
  /** Dims of an activation handed between stages, from its channels. */
  activationDims(channels: number): Dim[];
  /** Declares the last stage's outputs from the last link's value. */
  finish(g: GraphBuilder, x: Value): void;
}

/**
 * The chain's stage graphs: stage k > 0 takes `after.<path>`, the activation after the previous
 * stage's last link, which that stage outputs; the first takes the chain's input, the last
 * declares its outputs. One stage is the fused graph, named and documented as the chain.
 */
export function buildChain(chain: Chain, source: ParamSource): GraphBuilder[] {
  const total = chain.stageSizes.reduce((a, b) => a + b, 0);
  if (total !== chain.links.length || chain.stageSizes.some((n) => !(Number.isInteger(n) && n > 0)))
    throw new DistVaeError('INVALID_ARGUMENT', `stage sizes [${chain.stageSizes.join(', ')}] do not cut ${chain.links.length} links`);
  const n = chain.stageSizes.length;
  const stages: GraphBuilder[] = [];
  let next = 0;
  let x: Value | null = null;
  let handed: ChainLink | null = null;
  for (const [k, size] of chain.stageSizes.entries()) {
    const links = chain.links.slice(next, next + size);
    next += size;
    const part = n === 1 ? '' : ` stage ${k + 1}/${n} (${links[0]!.path} … ${links[links.length - 1]!.path})`;
    const g = new GraphBuilder(`${chain.name}${part}`, { docString: `${chain.docString}${part}` });
    stages.push(g);
    x = handed === null ? g.input(chain.input.name, chain.input.dims) : g.input(afterName(handed), chain.activationDims(handed.channels));
    const root = new Module(g, source);
    for (const link of links) x = link.apply(root, x);
    handed = links[links.length - 1]!;
    if (k < n - 1) g.output(afterName(handed), x, chain.activationDims(handed.channels));
  }
  chain.finish(stages[n - 1]!, x!);
  return stages;
}

const afterName = (link: ChainLink) => `after.${link.path}`;
