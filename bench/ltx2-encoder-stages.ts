// LTX-2's published encoder at real size with its weights in memory, as a page or a caller of
// `createRunner` holds them (every weight embedded in the models): the fused graph is refused
// before onnxruntime (over protobuf's 2 GiB), the staged one (≤ 1 GiB of weights per stage)
// opens and encodes a small video. Prints each stage's weight bytes, the times and the RSS (peak:
// run it under /usr/bin/time -f %M).
// Synthetic float32 weights (seed 4), generated in JS: 2.59 GiB.
// Usage: npx tsx bench/ltx2-encoder-stages.ts [--frames 9] [--size 64]

import { parseArgs } from 'node:util';
import { resolveFamilyConfig } from '../src/families/registry.js';
import {
  buildLtx2EncoderGraph,
  buildLtx2EncoderStages,
  ltx2EncoderParams,
  ltx2EncoderStagePlan,
} from '../src/families/ltx2/encoder-graph.js';
import { ltx2 } from '../src/families/ltx2/spec.js';
import { encodeModel } from '../src/graph/onnx-proto.js';
import { createStagedSession } from '../src/runtime/staged-session.js';
import { seededTensor } from '../src/tensor.js';
import { syntheticWeights, weightBytes } from '../src/weights/synthetic.js';

const { values } = parseArgs({ options: { frames: { type: 'string', default: '9' }, size: { type: 'string', default: '64' } } });
const frames = Number(values.frames);
const size = Number(values.size);
const MiB = 2 ** 20;
const rss = () => `${(process.memoryUsage().rss / MiB).toFixed(0)} MiB`;
const seconds = (t0: number) => `${((performance.now() - t0) / 1000).toFixed(1)} s`;

const config = resolveFamilyConfig(ltx2, undefined);
const params = ltx2EncoderParams(config);
let t0 = performance.now();
const weights = syntheticWeights(params, 4);
console.log(`weights: ${params.length} tensors, ${weightBytes(params)} bytes, generated in ${seconds(t0)}; rss ${rss()}`);

try {
  encodeModel(buildLtx2EncoderGraph(config, weights).toModel());
  console.log('fused: serialised (unexpected)');
} catch (e) {
  console.log(`fused: ${(e as Error).message}`);
}

t0 = performance.now();
const stages = buildLtx2EncoderStages(config, weights);
const session = await createStagedSession(stages, { intraOpThreads: 2 });
console.log(`staged: ${stages.length} stages opened in ${seconds(t0)}; rss ${rss()}`);
for (const s of ltx2EncoderStagePlan(config)) console.log(`  ${s.links[0]} … ${s.links[s.links.length - 1]}: ${s.bytes} bytes of weights`);
const video = seededTensor([1, 3, frames, size, size], 11);
t0 = performance.now();
const { latents } = await session.run({ image: video });
let finite = true;
for (const v of latents!.data) finite &&= Number.isFinite(v);
console.log(`encode ${video.dims.join('×')} → ${latents!.dims.join('×')} in ${seconds(t0)}, finite: ${finite}; rss ${rss()}`);
await session.dispose();
