// The time model's arithmetic (multiply-accumulates and bytes from the op table's shapes, against
// hand counts), its area fit against a direct shape inference at a size it was not fitted on, and
// how ranks, threads, shards and overlaps enter its terms.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningVae } from '../families/registry.js';
import { GraphBuilder } from '../graph/builder.js';
import { seededTensor } from '../tensor.js';
import { TINY_KL } from '../ranks/testing/tiny-vae.js';
import { tileGraphs, type MemoryPlan } from './model.js';
import { inputDimsOf } from './runs.js';
import { inferShapes } from './shapes.js';
import { graphCost, predictTime, secondsOfTerms, timeTerms } from './time-model.js';
import { TIME_CALIBRATIONS, timeCalibrationOf } from './time-calibration.js';

const kl = () => planningVae('autoencoder-kl', TINY_KL);
const whole: MemoryPlan = { strategy: 'whole', ranks: 1 };

test('a convolution costs output elements x Cin/group x kernel MACs, a matmul M x N x K; other ops the bytes they write', () => {
  const g = new GraphBuilder('count');
  const x = g.input('x', [1, 4, 16, 16]);
  const conv = g.conv(x, g.param('w', seededTensor([8, 4, 3, 3], 1)), g.param('b', seededTensor([8], 2)), { pads: 1 });
  const grouped = g.conv(conv, g.param('w2', seededTensor([8, 4, 3, 3], 3)), undefined, { pads: 1, group: 2 });
  g.output('y', g.relu(grouped));
  const cost = graphCost(g.toModel(), [1, 4, 16, 16]);
  // Hand counts: 16·16·8 outputs × 4·3·3 reads, twice (the grouped conv reads 8/2 channels); Relu writes 8·16·16 floats.
  assert.equal(cost.macs, 2 * 16 * 16 * 8 * 4 * 9);
  assert.equal(cost.bytes, 8 * 16 * 16 * 4);
  // The two convolutions write 8·16·16 floats each (their cost per output).
  assert.equal(cost.convBytes, 2 * 8 * 16 * 16 * 4);

  const m = new GraphBuilder('matmul');
  const a = m.input('a', [1, 64, 32]);
  m.output('y', m.matMul(a, m.param('b', seededTensor([32, 16], 4))));
  assert.equal(graphCost(m.toModel(), [1, 64, 32]).macs, 64 * 16 * 32);
});

test("the area fit (from three reference tiles) gives a decoder's cost at other sizes exactly, attention's quadratic term included", () => {
  const vae = kl();
  for (const [h, w] of [
    [12, 20],
    [48, 64],
  ] as const) {
    const dims = [1, 4, h, w];
    // The independent path: a shape inference of every graph at this very size.
    const direct = tileGraphs(vae, dims).reduce((s, g) => s + g.runs * graphCost(g.model, dims).macs, 0);
    const terms = timeTerms(vae, whole, { height: 2 * h, width: 2 * w }, { threads: 1, cores: 1 });
    assert.ok(Math.abs(terms.gmacs * 1e9 - direct) <= 1e-9 * direct, `${h}x${w}: ${terms.gmacs * 1e9} against ${direct}`);
  }
});

test('tiles pay for their overlap, shards for their halo and steps; ranks sharing cores divide them', () => {
  const vae = planningVae('tae', { variant: 'taef2' });
  const sample = { height: 1024, width: 1024 };
  const one = timeTerms(vae, whole, sample, { threads: 1, cores: 2 });
  const tiles = timeTerms(
    vae,
    { strategy: 'tile', ranks: 1, window: { height: 512, width: 512 }, overlap: { height: 128, width: 128 } },
    sample,
    {
      threads: 1,
      cores: 2,
    },
  );
  // 3 × 3 tiles of up to 512 px over 1024 px: more decoded area than the image, nine runs.
  assert.ok(tiles.gmacs > 1.3 * one.gmacs && tiles.runs === 9);
  const shard = timeTerms(vae, { strategy: 'shard', ranks: 2 }, sample, { threads: 1, cores: 2 });
  // A band is half the rows plus its halo: more than half the work, less than all of it.
  assert.ok(shard.gmacs > 0.5 * one.gmacs && shard.gmacs < 0.7 * one.gmacs, `${shard.gmacs} of ${one.gmacs}`);
  assert.ok(shard.stages > 0 && shard.exchangedGbytes > 0);
  // Two ranks of 2 threads on 2 cores get one core each; on separate devices each keeps its 2.
  assert.equal(timeTerms(vae, { strategy: 'shard', ranks: 2 }, sample, { threads: 2, cores: 2 }).parallelism, 1);
  assert.equal(timeTerms(vae, { strategy: 'shard', ranks: 2 }, sample, { threads: 2, cores: 2, devices: 'separate' }).parallelism, 2);
  // A plan's own threads (the whole decode for 2 ranks) win over the decode's.
  assert.equal(timeTerms(vae, { ...whole, threads: 2 }, sample, { threads: 1, cores: 2 }).parallelism, 2);
});

test('on one machine whose cores the ranks share, the whole decode with their threads beats row sharding; separate devices divide nothing', () => {
  const vae = planningVae('tae', { variant: 'taef2' });
  const sample = { height: 768, width: 2048 };
  const shared = { threads: 1, cores: 2 };
  const wholeTime = predictTime(vae, { ...whole, threads: 2 }, sample, shared).seconds;
  const shardTime = predictTime(vae, { strategy: 'shard', ranks: 2 }, sample, shared).seconds;
  assert.ok(wholeTime < shardTime, `whole ${wholeTime} s, shard ${shardTime} s`);
  const separate = { threads: 1, cores: 2, devices: 'separate' as const };
  // On separate devices a rank keeps its threads: the same sharding is faster than on shared
  // cores, and blended tiles dealt to 4 devices beat one device's whole decode. (Row sharding
  // itself does not beat it on the CPU calibration: its arena-less stage sessions write every
  // byte afresh — measured, TAEF2 at 768² on 2 ranks 7.2 s against 5.9 s whole, 1 thread each.)
  const shard4 = { strategy: 'shard', ranks: 4, threads: 2 } as const;
  assert.ok(predictTime(vae, shard4, sample, separate).seconds < predictTime(vae, shard4, sample, shared).seconds);
  const tiles = { strategy: 'tile', ranks: 4, window: { height: 512, width: 512 }, overlap: { height: 128, width: 128 } } as const;
  assert.ok(predictTime(vae, tiles, sample, separate).seconds < predictTime(vae, whole, sample, separate).seconds);
});

test('a convolution whose operands pass the cache is memory-bound: the spilled MACs grow with the tile, none for small tiles', () => {
  const vae = planningVae('tae', { variant: 'taef2' });
  const tile = (px: number): MemoryPlan => ({
    strategy: 'tile',
    ranks: 1,
    window: { height: px, width: px },
    overlap: { height: 0, width: 0 },
  });
  const cacheBytes = 32 * 2 ** 20;
  // TAEF2's full-resolution convolutions read and write 64 channels: 2 × 16 MiB at 256 px (in the cache), 2 × 64 MiB at 512 px.
  const small = timeTerms(vae, tile(256), { height: 256, width: 256 }, { threads: 1, cores: 1, cacheBytes });
  const large = timeTerms(vae, whole, { height: 512, width: 512 }, { threads: 1, cores: 1, cacheBytes });
  assert.ok(small.spilledGmacs < 0.05 * small.gmacs, `${small.spilledGmacs} of ${small.gmacs}`);
  assert.ok(large.spilledGmacs > 0.4 * large.gmacs && large.spilledGmacs <= large.gmacs, `${large.spilledGmacs} of ${large.gmacs}`);
  // The per-node cache test read from the area fit equals a test at the tile itself (an independent count).
  const direct = directSpilled(vae, [1, 32, 64, 64], cacheBytes);
  assert.ok(Math.abs(large.spilledGmacs * 1e9 - direct) <= 1e-6 * direct, `${large.spilledGmacs * 1e9} against ${direct}`);
  // Only a row-sharded rank pays for unpooled bytes.
  assert.equal(large.unpooledGbytes, 0);
  assert.ok(timeTerms(vae, { strategy: 'shard', ranks: 2 }, { height: 512, width: 512 }, { threads: 1, cores: 2 }).unpooledGbytes > 0);
});

/** MACs of the convolutions and matmuls whose input and output bytes exceed `cacheBytes`, by a shape inference at `dims`. */
function directSpilled(vae: ReturnType<typeof planningVae>, dims: number[], cacheBytes: number): number {
  let macs = 0;
  for (const g of tileGraphs(vae, dims)) {
    const shapes = inferShapes(g.model, inputDimsOf(g.model, dims));
    for (const node of g.model.graph!.node!) {
      const out = shapes.get(node.output![0]!);
      const input = shapes.get(node.input![0]!);
      if (!out || !input || (node.op_type !== 'Conv' && node.op_type !== 'MatMul')) continue;
      const w =
        node.op_type === 'Conv'
          ? shapes
              .get(node.input![1]!)!
              .dims.slice(1)
              .reduce((a, b) => a * b, 1)
          : input.dims[input.dims.length - 1]!;
      const outElements = out.dims.reduce((a, b) => a * b, 1);
      const inElements = input.dims.reduce((a, b) => a * b, 1);
      if (4 * (outElements + inElements) > cacheBytes) macs += g.runs * outElements * w;
    }
  }
  return macs;
}

test('seconds add the calibrated terms; a provider without a time calibration is priced by the CPU entry and says so', () => {
  const cal = TIME_CALIBRATIONS['cpu']!;
  const terms = {
    gmacs: 10,
    gbytes: 1,
    convGbytes: 2,
    spilledGmacs: 3,
    unpooledGbytes: 0.75,
    parallelism: 3,
    runs: 2,
    stages: 4,
    exchangedGbytes: 0.5,
    loadedGbytes: 0.25,
  };
  const speedup = 1 + cal.threadEfficiency * 2;
  const expected =
    cal.fixedSeconds +
    (10 * cal.secondsPerGmac + 2 * cal.secondsPerConvGbyte + cal.secondsPerGbyte) / speedup +
    3 * cal.secondsPerSpilledGmac +
    0.75 * cal.secondsPerUnpooledGbyte +
    2 * cal.secondsPerRun +
    4 * cal.secondsPerStage +
    0.5 * cal.secondsPerExchangedGbyte +
    0.25 * cal.secondsPerLoadedGbyte;
  assert.ok(Math.abs(secondsOfTerms(terms, cal) - expected) < 1e-12);
  // Oversubscribed (ranks past the cores): each rank gets a share of one core.
  assert.ok(secondsOfTerms({ ...terms, parallelism: 0.5 }, cal) > secondsOfTerms({ ...terms, parallelism: 1 }, cal));
  assert.deepEqual(timeCalibrationOf('webgpu'), { calibration: cal, calibrated: false });
  assert.equal(predictTime(kl(), whole, { height: 64, width: 64 }, { provider: 'webgpu' }).calibrated, false);
});
