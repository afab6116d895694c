// What the memory model reads of a decoding process: the arena's regions over runs in order, a
// causal history kept once per entry, sessions run again on their history, the video families'
// session graphs (shapes against what onnxruntime returns), and a row-sharded rank's walk (middle
// ranks read halos on both sides).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningVae, runtimeOf } from '../families/registry.js';
import { HUNYUAN_VIDEO_TINY, LTX2_TINY, WAN21_TINY, WAN22_TINY } from '../families/testing/video-configs.js';
import { createSession } from '../runtime/session.js';
import { elementCount, seededTensor, type Tensor } from '../tensor.js';
import { predictMemory, type MemoryPlan, type MemoryTerms } from './model.js';
import {
  conv2dWeightBytes,
  decodingHold,
  inputDimsOf,
  mappedKernelSizes,
  mappedWeightBytes,
  sessionRuns,
  type SessionRun,
} from './runs.js';
import { GraphBuilder } from '../graph/builder.js';
import { inferShapes } from './shapes.js';

const run = (key: string, peakBytes: number, kept: [string, number][] = []): SessionRun => ({
  key,
  peak: { peakBytes, maxTensorBytes: peakBytes / 2, outputBytes: 8, inputBytes: 4, peakNode: 'n' },
  runs: 1,
  weightBytes: 100,
  weightSizes: [100],
  packedBytes: 60,
  kept: new Map(kept),
  outputBytes: 8,
});

test('an arena keeps its largest run, a region for every run larger than all before it, and the pattern of a shape run again', () => {
  // Runs of 50, 80, 60, 120 bytes on one session: regions of 50, 80 and 120 were added.
  const hold = decodingHold([[run('a', 50)], [run('a', 80)], [run('a', 60)], [run('a', 120)]]);
  assert.equal(hold.activation, 120);
  assert.equal(hold.growth, 130);
  assert.equal(hold.weightBytes, 100);
  assert.equal(hold.packedWeightBytes, 60);
  assert.equal(hold.pattern, 0);
  // The largest run first: one region, reused by every later, smaller run; a shape run twice
  // allocates its memory pattern.
  const repeated = decodingHold([[run('a', 120)], [run('a', 80)], [run('a', 80)], [run('a', 60)]], { memoryPattern: true });
  assert.equal(repeated.growth, 0);
  assert.equal(repeated.pattern, 80);
  assert.equal(decodingHold([[{ ...run('a', 70), runs: 3 }]], { memoryPattern: true }).pattern, 70);
  // Sessions with the arena run with memory patterns off (runtime/session.ts): no pattern block.
  assert.equal(decodingHold([[run('a', 120)], [run('a', 80)], [run('a', 80)]]).pattern, 0);
  // Two sessions: two arenas, two copies of weights.
  const two = decodingHold([[run('a', 50), run('b', 70)]]);
  assert.equal(two.activation, 120);
  assert.equal(two.weightBytes, 200);
  // Two sessions of one slot (the runner disposes one before it opens the other): never held together.
  const replaced = decodingHold([[{ ...run('a', 50), slot: 'd' }], [{ ...run('b', 70), slot: 'd' }]]);
  assert.equal(replaced.activation, 70);
  assert.equal(replaced.weightBytes, 100);
});

test('a session run again within a tile on the history it keeps counts its largest such run as recurrent', () => {
  // Wan's frame steps: `next` runs once per frame after the first, fed the presents it wrote.
  const frames = (next: number) => [run('first', 30, [['present:c', 4]]), { ...run('next', next, [['present:c', 4]]), runs: 3 }];
  const hold = decodingHold([frames(50), frames(70)]);
  assert.equal(hold.recurrent, 70);
  // Run once, or run again without a history (tiles of an image family): not recurrent.
  assert.equal(decodingHold([[run('next', 50, [['present:c', 4]])]]).recurrent, 0);
  assert.equal(decodingHold([[{ ...run('a', 50), runs: 4 }]]).recurrent, 0);
  // One term per session: two recurrent sessions add up.
  assert.equal(
    decodingHold([
      [
        { ...run('a', 50, [['present:c', 4]]), runs: 2 },
        { ...run('b', 20, [['present:d', 4]]), runs: 2 },
      ],
    ]).recurrent,
    70,
  );
});

test('a history entry written by several sessions of a sequence is kept once', () => {
  const hold = decodingHold([
    [
      run('first', 10, [['present:c', 40]]),
      run('next', 10, [
        ['present:c', 40],
        ['present:d', 8],
      ]),
    ],
  ]);
  assert.equal(hold.kept, 48);
});

async function ortOutputs(model: Parameters<typeof createSession>[0], feeds: Record<string, Tensor>): Promise<Record<string, Tensor>> {
  const session = await createSession(model, { intraOpThreads: 1 });
  try {
    return await session.run(feeds);
  } finally {
    await session.dispose();
  }
}

for (const [family, config, dims] of [
  ['wan', WAN21_TINY, [1, 4, 3, 4, 6]],
  ['wan', WAN22_TINY, [1, 48, 2, 4, 4]],
  ['hunyuan-video', HUNYUAN_VIDEO_TINY, [1, 4, 3, 4, 6]],
] as const) {
  test(`${family} ${config === WAN22_TINY ? '2.2 ' : ''}sessions: every output's inferred shape is onnxruntime's`, async () => {
    const vae = planningVae(family, config);
    const runtime = runtimeOf(vae.family);
    const weights = new Map(runtime.decoderParams(vae.config).map((p) => [p.name, seededTensor([...p.dims], 1)]));
    const description = runtime.memoryRuns!(vae.config, weights, [...dims]);
    assert.ok(description.sessions.length >= 1);
    for (const s of description.sessions) {
      const inputs = inputDimsOf(s.model, dims);
      const shapes = inferShapes(s.model, inputs);
      const feeds = Object.fromEntries(Object.entries(inputs).map(([name, d]) => [name, seededTensor(d, 2)]));
      const actual = await ortOutputs(s.model, feeds);
      for (const [name, t] of Object.entries(actual)) assert.deepEqual(shapes.get(name)?.dims, t.dims, `${s.key} ${name}`);
    }
    const runs = sessionRuns(description, dims);
    assert.ok(runs.every((r) => r.peak.peakBytes > 0 && r.weightBytes > 0));
  });
}

test('wan: the frame-step sessions run once per frame reaching each segment, and keep a history', () => {
  const vae = planningVae('wan', WAN21_TINY);
  const runtime = runtimeOf(vae.family);
  const weights = new Map(
    runtime.decoderParams(vae.config).map((p) => [p.name, { dims: [...p.dims], data: new Float32Array(elementCount(p.dims)) }]),
  );
  const description = runtime.memoryRuns!(vae.config, weights, [1, 4, 3, 4, 4]);
  // One temporal upsampler: segment 0 sees 3 frames, segment 1 sees 1 + 2·2 = 5.
  assert.deepEqual(
    description.sessions.map((s) => [s.key, s.runs]),
    [
      ['segment0.first', 1],
      ['segment0.next', 2],
      ['segment1.first', 1],
      ['segment1.next', 4],
    ],
  );
  const hold = decodingHold([sessionRuns(description, [1, 4, 3, 4, 4])]);
  assert.ok(hold.kept > 0);
  // One frame: only the `only` graphs, and nothing kept.
  const image = runtime.memoryRuns!(vae.config, weights, [1, 4, 1, 4, 4]);
  assert.deepEqual(
    image.sessions.map((s) => s.key),
    ['segment0.only', 'segment1.only'],
  );
  assert.equal(decodingHold([sessionRuns(image, [1, 4, 1, 4, 4])]).kept, 0);
});

test('video predictions: temporal chunks hold a chunk more than one, more frames hold more', () => {
  const vae = planningVae('hunyuan-video', HUNYUAN_VIDEO_TINY);
  const plan = { strategy: 'tile' as const, ranks: 1, window: { height: 32, width: 32 }, overlap: { height: 8, width: 8 } };
  const few = predictMemory(vae, plan, { height: 32, width: 32, frames: 9 });
  const many = predictMemory(vae, plan, { height: 32, width: 32, frames: 41 });
  assert.ok(many.peakBytes > few.peakBytes);
  const wan = planningVae('wan', WAN21_TINY);
  assert.ok(
    predictMemory(wan, { strategy: 'whole', ranks: 1 }, { height: 32, width: 32, frames: 9 }).peakBytes >
      predictMemory(wan, { strategy: 'whole', ranks: 1 }, { height: 32, width: 32, frames: 1 }).peakBytes,
  );
});

test('families that describe no decoder graphs are refused by the memory model, naming the family', () => {
  assert.throws(
    () => predictMemory(planningVae('ltx2', LTX2_TINY), { strategy: 'whole', ranks: 1 }, { height: 64, width: 64, frames: 9 }),
    /ltx2 family does not describe/,
  );
  // Video families have no fused graph to shard.
  assert.throws(
    () => predictMemory(planningVae('wan', WAN21_TINY), { strategy: 'shard', ranks: 2 }, { height: 64, width: 64, frames: 1 }),
    /does not expose its fused decoder graph/,
  );
});

test('a row-sharded rank holds less than the whole decode; a middle rank reads a halo on both sides', () => {
  // TAESD: local convolutions only, so every stage reads a halo.
  const vae = planningVae('tae');
  // TAESD's halo is 19 latent rows: bands of ~43 rows, so a middle band reads 81 rows and an edge band 62.
  const sample = { height: 1024, width: 64 };
  const whole = predictMemory(vae, { strategy: 'whole', ranks: 1 }, sample);
  const three = predictMemory(vae, { strategy: 'shard', ranks: 3 }, sample);
  assert.equal(three.ranks.length, 3);
  const [top, middle, bottom] = three.ranks.map((r) => r.terms.shard) as [number, number, number];
  assert.ok(middle > top && middle > bottom, `middle ${middle}, edges ${top} / ${bottom}`);
  assert.ok(top < whole.coordinator.terms.activation);
});

test("under glibc's own allocator a row-sharded rank whose band makes a level's tensors just under its 32 MiB mmap cap holds them on the heap: TAEF2's edge ranks at 1024² on 3 ranks; distvae's fixed threshold maps them", () => {
  // Bands of 43/42/43 latent rows: the edge ranks run the last stage on 55 rows, whose half-resolution
  // tensors are 27.5 MiB (heap, once the first is freed); the middle rank's 66 rows make 33.5 MiB (mapped).
  const vae = planningVae('tae', { variant: 'taef2' });
  const plan = { strategy: 'shard', ranks: 3 } as const;
  const sample = { height: 1024, width: 1024 };
  // Under distvae's rank allocator (a fixed 256 KiB threshold) every such tensor is mapped and returned.
  const fixed = predictMemory(vae, plan, sample);
  for (const r of fixed.ranks) assert.ok(r.terms.heap < 2 ** 20, `rank ${r.rank} heap ${r.terms.heap}`);
  const three = predictMemory(vae, plan, sample, { rankAllocator: 'inherit' });
  const [top, middle, bottom] = three.ranks.map((r) => r.terms) as [MemoryTerms, MemoryTerms, MemoryTerms];
  assert.ok(middle.shard > top.shard && middle.shard > bottom.shard);
  assert.ok(top.heap > 2 * middle.heap && bottom.heap > 2 * middle.heap, `heap: edges ${top.heap} / ${bottom.heap}, middle ${middle.heap}`);
  // The edge ranks are predicted above the middle one, as measured (bench/results/memory-model.md).
  assert.ok(three.ranks[0]!.peakBytes > three.ranks[1]!.peakBytes && three.ranks[2]!.peakBytes > three.ranks[1]!.peakBytes);
});

test("a row-sharded coordinator's relay is its largest message: one rank's attention keys and values for a peer", () => {
  const vae = planningVae('autoencoder-kl');
  // 1024² on 2 ranks: a rank's 64 of 128 latent rows × 128 columns × 512 channels, keys and values, float32.
  const two = predictMemory(vae, { strategy: 'shard', ranks: 2 }, { height: 1024, width: 1024 });
  assert.equal(two.coordinator.terms.relay, 64 * 128 * 512 * 4 * 2);
  // 768² on 3 ranks sends more bytes in all, in smaller messages (32 rows of 96).
  const three = predictMemory(vae, { strategy: 'shard', ranks: 3 }, { height: 768, width: 768 });
  assert.equal(three.coordinator.terms.relay, 32 * 96 * 512 * 4 * 2);
});

test('a streamed decode deals tiles round-robin in raster order: each rank is predicted for the tiles it gets', () => {
  // TAEF2 at 1024² in 512 px tiles (3 x 3, the last row and column clipped) on 4 ranks: round-robin,
  // rank 2 gets tiles 2 and 6, both clipped, and holds less than rank 0 (tiles 0, 4, 8).
  const vae = planningVae('tae', { variant: 'taef2' });
  const plan = { strategy: 'tile' as const, ranks: 4, window: { height: 512, width: 512 }, overlap: { height: 128, width: 128 } };
  const streamed = predictMemory(vae, plan, { height: 1024, width: 1024 }, { streamed: true });
  assert.ok(streamed.ranks[2]!.peakBytes < streamed.ranks[0]!.peakBytes);
  assert.ok(streamed.ranks[2]!.terms.activation < streamed.ranks[0]!.terms.activation);
});

test('only kernels with a spatial extent count as prepacked: a 1×1 convolution adds none (conv2dWeightBytes)', () => {
  const g = new GraphBuilder('kernels');
  const x = g.input('x', [1, 8, 4, 4]);
  const spatial = g.conv(x, g.param('k3', seededTensor([8, 8, 3, 3], 1)), undefined, { pads: 1 });
  g.output('y', g.conv(spatial, g.param('k1', seededTensor([16, 8, 1, 1], 2)), undefined));
  assert.equal(conv2dWeightBytes(g.toModel()), 4 * 8 * 8 * 3 * 3);
});

test('kernels of convolutions that are not 2-D are read in place from the mapped weights file: counted once each, those under the mmap threshold left to the heap term', () => {
  const g = new GraphBuilder('kernels');
  const x = g.input('x', [1, 8, 3, 4, 4]);
  const k3 = g.param('k3', seededTensor([8, 8, 3, 3, 3], 1));
  const twice = g.conv(g.conv(x, k3, undefined, { pads: 1 }), k3, undefined, { pads: 1 });
  const pointwise = g.conv(twice, g.param('k1', seededTensor([16, 8, 1, 1, 1], 2)), undefined);
  const flat = g.reshape(pointwise, [1, 48, 4, 4]);
  g.output('y', g.conv(flat, g.param('k2', seededTensor([8, 48, 3, 3], 3)), undefined, { pads: 1 }));
  const model = g.toModel();
  // The 2-D kernel is prepacked (conv2dWeightBytes), not mapped; the 3-D one is counted once.
  assert.deepEqual(mappedKernelSizes(model), [4 * 8 * 8 * 27, 4 * 16 * 8]);
  assert.equal(conv2dWeightBytes(model), 4 * 8 * 48 * 9);
  assert.equal(mappedWeightBytes(mappedKernelSizes(model), 4 * 16 * 8 + 1), 4 * 8 * 8 * 27);
  assert.equal(mappedWeightBytes(mappedKernelSizes(model), 1), 4 * (8 * 8 * 27 + 16 * 8));
});

test("HunyuanVideo 1.5's published decoder: a rank process holds its 3-D kernels over 256 KiB once, a process under glibc's threshold those over 32 MiB; a 2-D family none", () => {
  const vae = planningVae('hunyuan-video-1.5');
  // An independent count: the decoder's 5-D parameters are its 3-D convolution kernels, but for
  // the mid-block attention's 1×1×1 projections, which the graph runs as MatMuls (prepacked).
  const kernels = runtimeOf(vae.family)
    .decoderParams(vae.config)
    .filter((p) => p.dims.length === 5 && !p.name.includes('.attentions.'))
    .map((p) => 4 * elementCount(p.dims));
  const over = (bytes: number) => kernels.filter((k) => k >= bytes).reduce((a, b) => a + b, 0);
  const sample = { height: 64, width: 64, frames: 1 };
  const rank = predictMemory(vae, { strategy: 'whole', ranks: 1, isolated: true }, sample).ranks[0]!.terms;
  assert.equal(rank.mappedWeights, over(256 * 1024));
  assert.ok(rank.mappedWeights > 3 * 2 ** 30, 'the published decoder has over 3 GiB of 3-D kernels');
  assert.equal(rank.packedWeights, 0);
  const own = predictMemory(vae, { strategy: 'whole', ranks: 1 }, sample).coordinator.terms;
  assert.equal(own.mappedWeights, over(32 * 2 ** 20));
  // Those under 32 MiB are the heap term's, not counted twice.
  assert.ok(own.heapWeights >= kernels.filter((k) => k < 32 * 2 ** 20).reduce((a, b) => a + b, 0));
  const sd = predictMemory(planningVae('autoencoder-kl'), { strategy: 'whole', ranks: 1, isolated: true }, { height: 64, width: 64 });
  assert.equal(sd.ranks[0]!.terms.mappedWeights, 0);
});

test("several tiles decoded in a process under glibc's own arenas hold one activation peak more per extra intra-op thread; one tile, one thread or distvae's rank allocator none", () => {
  const vae = planningVae('tae', { variant: 'taef2' });
  const tiles = { strategy: 'tile' as const, ranks: 1, window: { height: 256, width: 256 }, overlap: { height: 64, width: 64 } };
  const sample = { height: 512, width: 512 };
  const arena = (plan: MemoryPlan, threads: number) => predictMemory(vae, plan, sample, { threads }).coordinator.terms;
  const two = arena(tiles, 2);
  assert.ok(two.activation > 0);
  assert.equal(two.threadArena, two.activation);
  assert.equal(arena(tiles, 3).threadArena, 2 * two.activation);
  assert.equal(arena({ ...tiles, threads: 1 }, 4).threadArena, 0, "the plan's own threads win");
  assert.equal(arena(tiles, 1).threadArena, 0);
  assert.equal(arena({ strategy: 'whole', ranks: 1 }, 2).threadArena, 0);
  const ranks = predictMemory(vae, { ...tiles, ranks: 2 }, sample, { threads: 2 });
  assert.ok(ranks.ranks.every((r) => r.terms.threadArena === 0));
  const inherited = predictMemory(vae, { ...tiles, ranks: 2 }, sample, { threads: 2, rankAllocator: 'inherit' });
  assert.ok(inherited.ranks.every((r) => r.terms.threadArena === r.terms.activation && r.terms.activation > 0));
});
