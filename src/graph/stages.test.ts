// Staged graphs: the stages and regions of a family's decoder, run one after another on the
// whole latent (regions as their own extracted subgraphs), reproduce the fused graph; every
// weight lands in exactly one step; and the cut is where the sync regions are.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { architectureModel } from '../decode/decoder-model.js';
import { loadVae } from '../decode/vae.js';
import { resolveFamily, runtimeOf } from '../families/registry.js';
import type { RawConfig } from '../families/types.js';
import { createSession } from '../runtime/session.js';
import type { Tensor } from '../tensor.js';
import type { ModelProto } from './onnx-proto.js';
import { extractSubgraph, segmentGraph, stageGraph } from './stages.js';
import { assertClose } from './testing/compare.js';
import { seededTensor } from '../tensor.js';

async function runModel(model: ModelProto, feeds: Record<string, Tensor>): Promise<Record<string, Tensor>> {
  const s = await createSession(model, { intraOpThreads: 1 });
  try {
    return await s.run(feeds);
  } finally {
    await s.dispose();
  }
}

/** Runs every step of the staged graph in order on whole tensors. */
async function runStaged(model: ModelProto, input: Tensor): Promise<Tensor> {
  const staged = stageGraph(model);
  const segments = segmentGraph(model);
  const values = new Map<string, Tensor>([[staged.input, input]]);
  for (const [i, step] of staged.steps.entries()) {
    const graph =
      step.kind === 'stage'
        ? step.graph
        : step.kind === 'attention'
          ? step.core
          : extractSubgraph(model, segments[i]!.nodes, [step.region.output], 'gn');
    const outputs = await runModel(graph.model, Object.fromEntries(graph.inputs.map((n) => [n, values.get(n)!])));
    for (const [name, t] of Object.entries(outputs)) values.set(name, t);
  }
  return values.get(staged.output)!;
}

const CASES: { family: string; config: RawConfig; latent: number[] }[] = [
  { family: 'autoencoder-kl', config: { block_out_channels: [16, 32], norm_num_groups: 8, layers_per_block: 1 }, latent: [2, 4, 5, 7] },
  {
    family: 'tae',
    config: { variant: 'taef2', decoder_block_out_channels: [16, 16, 16, 16], num_decoder_blocks: [2, 1, 1, 1] },
    latent: [1, 32, 4, 6],
  },
];

test('stages and regions run one after another reproduce the fused decoder', async () => {
  for (const c of CASES) {
    const vae = await loadVae({ family: c.family, config: c.config, weights: 'synthetic', seed: 3 }, { threads: 1 });
    try {
      const z = seededTensor(c.latent, 5, 2);
      const model = vae.decoderModel();
      assertClose(await runStaged(model, z), await vae.runner.decode(z), `${c.family} staged vs fused`);
    } finally {
      await vae.dispose();
    }
  }
});

test('each weight goes to exactly one step; stages read values earlier steps produce', () => {
  const spec = resolveFamily('autoencoder-kl', CASES[0]!.config);
  const model = architectureModel(spec, runtimeOf(spec), spec.resolveConfig(CASES[0]!.config));
  const staged = stageGraph(model);
  const perStep = staged.steps.flatMap(
    (s) => (s.kind === 'stage' ? s.graph : s.kind === 'attention' ? s.core : null)?.model.graph?.initializer?.map((t) => t.name!) ?? [],
  );
  const gnWeights = staged.steps.flatMap((s) => (s.kind === 'group-norm' ? [s.region.scale, s.region.bias] : []));
  assert.deepEqual([...perStep, ...gnWeights].sort(), (model.graph!.initializer ?? []).map((t) => t.name!).sort());
  const available = new Set([staged.input]);
  for (const step of staged.steps) {
    const reads = step.kind === 'stage' ? step.graph.inputs : step.kind === 'attention' ? step.core.inputs : [step.region.input];
    for (const r of reads) assert.ok(available.has(r), `${r} is read before it is produced`);
    for (const o of step.kind === 'stage' ? step.graph.outputs : [step.region.output]) available.add(o);
  }
  assert.ok(available.has(staged.output));
  // conv_in is the first stage; the mid block's GroupNorms cut the stages that follow.
  assert.deepEqual(
    staged.steps.slice(0, 6).map((s) => (s.kind === 'stage' ? `stage ${s.index}` : `${s.kind} ${s.region.name}`)),
    [
      'stage 0',
      'group-norm decoder.mid_block.resnets.0.norm1',
      'stage 1',
      'group-norm decoder.mid_block.resnets.0.norm2',
      'stage 2',
      'group-norm decoder.mid_block.attentions.0.group_norm',
    ],
  );
});
