// Float64 reference of madebyollin's TAE Encoder and Decoder (taesd.py at 5cccb12, as described
// in the project notes), written apart from graph.ts so tests can judge the graphs: the
// modules are listed the way taesd.py's nn.Sequential lists them, a module's list position is
// its checkpoint key, and each module is a function over the float64 reference ops. Keys are
// madebyollin's (bare indices).

import type { Tensor } from '../../../tensor.js';
import * as ref from '../../../graph/testing/reference-ops.js';
import { add, type NumericTensor, type RefTensor } from '../../../graph/testing/reference-ops.js';

export interface ReferenceArch {
  latentChannels: number;
  width: number;
  /** Blocks per stage, in the order the half runs them. */
  blocks: readonly number[];
  /** TAEF2's GroupNorm pool in the blocks of the lowest-resolution stage. */
  midblockGn: boolean;
}

/** The reference architecture of one half, from a raw config that spells out every field it reads. */
export function referenceArch(raw: Readonly<Record<string, unknown>>, half: 'decoder' | 'encoder'): ReferenceArch {
  return {
    latentChannels: raw['latent_channels'] as number,
    width: (raw[`${half}_block_out_channels`] as number[])[0]!,
    blocks: raw[`num_${half}_blocks`] as number[],
    midblockGn: raw['use_midblock_gn'] === true,
  };
}

type Weights = ReadonlyMap<string, Tensor>;
type Module = (x: RefTensor, key: string) => RefTensor;

function get(sd: Weights, key: string): Tensor {
  const t = sd.get(key);
  if (!t) throw new Error(`reference: weight ${key} missing`);
  return t;
}

/** nn.Conv2d(·, ·, k, padding=k//2, stride, bias): the kernel size comes from the weight. */
function conv(sd: Weights, key: string, x: RefTensor, opts: { bias: boolean; stride?: number }): RefTensor {
  const w = get(sd, `${key}.weight`);
  const pad = Math.floor(w.dims[3]! / 2);
  const s = opts.stride ?? 1;
  return ref.conv(x, w, opts.bias ? get(sd, `${key}.bias`) : undefined, { pads: pad, strides: [s, s] });
}

/** taesd.py `Block(n, n, use_midblock_gn)`: skip is Identity (n_in == n_out), fuse is ReLU. */
function block(sd: Weights, pool: boolean): Module {
  return (x, key) => {
    if (pool) {
      let h = conv(sd, `${key}.pool.0`, x, { bias: false });
      h = ref.relu(ref.groupNorm(h, 4, get(sd, `${key}.pool.1.weight`), get(sd, `${key}.pool.1.bias`), 1e-5));
      x = add(x, conv(sd, `${key}.pool.3`, h, { bias: false }));
    }
    let h = ref.relu(conv(sd, `${key}.conv.0`, x, { bias: true }));
    h = ref.relu(conv(sd, `${key}.conv.2`, h, { bias: true }));
    h = conv(sd, `${key}.conv.4`, h, { bias: true });
    return ref.relu(add(h, x));
  };
}

function run(modules: Module[], x: RefTensor): RefTensor {
  return modules.reduce((h, m, index) => m(h, String(index)), x);
}

/** taesd.py `Decoder`: Clamp, conv, ReLU, [Blocks, Upsample, conv(no bias)]…, Blocks, conv. */
export function referenceDecode(sd: Weights, arch: ReferenceArch, z: NumericTensor): RefTensor {
  const modules: Module[] = [(x) => ref.map(x, (v) => Math.tanh(v / 3) * 3), (x, k) => conv(sd, k, x, { bias: true }), (x) => ref.relu(x)];
  arch.blocks.forEach((n, stage) => {
    for (let i = 0; i < n; i++) modules.push(block(sd, arch.midblockGn && stage === 0));
    const last = stage === arch.blocks.length - 1;
    if (!last) modules.push((x) => ref.upsampleNearest(x, [2, 2]));
    modules.push((x, k) => conv(sd, k, x, { bias: last }));
  });
  return run(modules, ref.toRef(z));
}

/** taesd.py `Encoder`: conv, Blocks, [conv(stride 2, no bias), Blocks]…, conv. */
export function referenceEncode(sd: Weights, arch: ReferenceArch, image: NumericTensor): RefTensor {
  const modules: Module[] = [];
  arch.blocks.forEach((n, stage) => {
    modules.push(stage === 0 ? (x, k) => conv(sd, k, x, { bias: true }) : (x, k) => conv(sd, k, x, { bias: false, stride: 2 }));
    for (let i = 0; i < n; i++) modules.push(block(sd, arch.midblockGn && stage === arch.blocks.length - 1));
  });
  modules.push((x, k) => conv(sd, k, x, { bias: true }));
  return run(modules, ref.toRef(image));
}
