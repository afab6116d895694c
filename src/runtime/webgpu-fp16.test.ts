// Half precision on onnxruntime's WebGPU provider (lavapipe in CI: it has shader-f16): tiny
// configs decoded in fp16 — whole, tiled, and row-sharded on 2 process ranks (whose GroupNorm
// statistics merges stay float32; through the API and the CLI) — equal the fp32 WebGPU decode of the same plan within 1.5e-2
// of the output's largest value. The bound: float16 keeps 11 significant bits (a relative
// rounding of 4.9e-4 per op), and these random-weight decoders chain ~20 convolutions and norms;
// the gaps measured on lavapipe are 4e-3 (tae) to 7e-3 (shard) — a wrong Cast or an overflow
// is off by O(1). Trained weights are measured in bench/fp16.ts (TAEF2 ≥ 40 dB PSNR).
// Without an adapter the tests skip and say so; under CI=true they fail (testing/webgpu-adapter.ts).

import assert from 'node:assert/strict';
import { after, test, type TestContext } from 'node:test';
import { loadVae, type LoadOptions, type Vae } from '../decode/vae.js';
import { configFile, KL_SMALL, TAE_SMALL } from '../families/testing/config-files.js';
import { cli } from '../cli/testing/in-process.js';
import { readNpy, writeNpy } from '../io/npy.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RawConfig } from '../families/types.js';
import { difference } from '../graph/testing/compare.js';
import { setTiling, type TilingRequest } from '../plan/planner.js';
import { localGroup } from '../ranks/local/index.js';
import type { LocalGroup } from '../ranks/local/local-group.js';
import { TINY_KL } from '../ranks/testing/tiny-vae.js';
import { useStrategy } from '../strategies/index.js';
import { seededTensor, type Tensor } from '../tensor.js';
import { needsWebgpu } from './testing/webgpu-adapter.js';

/** Agreement asked of an fp16 decode, relative to the largest value of the fp32 decode of the same plan (see the header). */
const FP16_TOLERANCE = 1.5e-2;

const px = (n: number) => ({ height: n, width: n });

function load(family: string, config: RawConfig, options: LoadOptions): Promise<Vae> {
  return loadVae({ family, config, weights: 'synthetic', seed: 3 }, { threads: 1, provider: 'webgpu', ...options });
}

function assertClose(t: TestContext, half: Tensor, full: Tensor, label: string): void {
  assert.deepEqual(half.dims, full.dims, label);
  const largest = full.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const { maxAbs } = difference(half, full);
  t.diagnostic(`${label}: fp16 vs fp32 max abs ${maxAbs.toExponential(2)} of a largest value ${largest.toExponential(2)}`);
  assert.ok(Number.isFinite(maxAbs) && maxAbs <= FP16_TOLERANCE * largest, `${label}: max abs ${maxAbs} > ${FP16_TOLERANCE} × ${largest}`);
}

const CASES: { family: string; config: RawConfig; latent: number[]; tiled: TilingRequest }[] = [
  // AutoencoderKL defaults force_upcast to true: fp16 must be forced.
  { family: 'autoencoder-kl', config: KL_SMALL, latent: [1, 4, 8, 8], tiled: { window: px(12), overlap: px(4) } },
  { family: 'tae', config: TAE_SMALL, latent: [1, 4, 4, 4], tiled: { window: px(16), overlap: px(8) } },
];

for (const c of CASES) {
  test(`webgpu fp16: ${c.family} decodes whole and tiled as its fp32 decode does`, async (t) => {
    if (!(await needsWebgpu(t))) return;
    const z = seededTensor(c.latent, 7);
    const full = await load(c.family, c.config, {});
    const half = await load(c.family, c.config, { precision: 'fp16', forceFp16: c.family === 'autoencoder-kl' });
    try {
      assert.equal(half.precision, 'fp16');
      for (const vae of [full, half]) setTiling(vae, 'off');
      assertClose(t, await half.decode(z), await full.decode(z), 'whole');
      for (const vae of [full, half]) setTiling(vae, c.tiled);
      assertClose(t, await half.decode(z), await full.decode(z), 'tiled');
    } finally {
      await Promise.all([full.dispose(), half.dispose()]);
    }
  });
}

// Every CLI decode starts a rank process, which compiles every shader anew on lavapipe (~30 s
// under load), so the CLI runs once: the force_upcast warning and the JSON's precision. That the
// JSON says fp16 where fp16 ran is the same field (session/report.ts reads Vae.precision), no
// longer decoded through a second CLI run.
test('webgpu fp16: a force_upcast config asked for fp16 decodes in fp32 and says why (API, CLI warning and JSON precision)', async (t) => {
  if (!(await needsWebgpu(t))) return;
  const vae = await load('autoencoder-kl', KL_SMALL, { precision: 'fp16' });
  try {
    assert.equal(vae.precision, 'fp32');
    assert.match(vae.precisionNote ?? '', /force_upcast.*--force-fp16/);
  } finally {
    await vae.dispose();
  }
  const dir = mkdtempSync(join(tmpdir(), 'distvae-fp16-'));
  const latents = join(dir, 'z.npy');
  writeNpy(latents, seededTensor([1, 4, 4, 4], 1));
  const upcast = await cli(
    ...['decode', '--synthetic', '--latents', latents, '--provider', 'webgpu', '--precision', 'fp16', '--json'],
    ...['--config', configFile(dir, 'kl.json', KL_SMALL), '--out', join(dir, 'kl.png')],
  );
  assert.equal(upcast.code, 0, upcast.stderr);
  assert.match(upcast.stderr, /^warning: the AutoencoderKL config sets force_upcast/m);
  assert.equal((JSON.parse(upcast.stdout) as { precision: string }).precision, 'fp32');
});

let group: LocalGroup | null = null;
after(() => group?.close());

// The API's shard decode, then the CLI's (issue 25: its memory model walked the shard plan over
// the float16 graph, whose Casts split the GroupNorm sync regions, and refused): the same plan,
// weights and latent, so the CLI's output equals the API's; both within the fp16 tolerance of the
// fp32 whole decode, and the CLI's JSON carries the memory model's per-rank prediction.
test('webgpu fp16: row sharding on 2 process ranks (float32 statistics merges) equals the fp32 whole decode, through the API and the CLI', async (t) => {
  if (!(await needsWebgpu(t))) return;
  const z = seededTensor([1, 4, 8, 8], 11);
  const full = await load('autoencoder-kl', TINY_KL, {});
  const half = await load('autoencoder-kl', TINY_KL, { precision: 'fp16', forceFp16: true });
  let api: Tensor;
  let reference: Tensor;
  try {
    group = localGroup({ ranks: 2, isolation: 'process', threadsPerRank: 1 });
    await group.start();
    setTiling(full, 'off');
    setTiling(half, 'off');
    const report = useStrategy(half, 'shard', group);
    api = await half.decode(z);
    assert.equal(report!.ranks().filter((r) => r.load > 0).length, 2, 'both ranks decoded');
    reference = await full.decode(z);
    assertClose(t, api, reference, 'shard (API)');
  } finally {
    await Promise.all([full.dispose(), half.dispose()]);
  }
  await group.close();
  group = null;
  const dir = mkdtempSync(join(tmpdir(), 'distvae-fp16-shard-'));
  const latents = join(dir, 'z.npy');
  writeNpy(latents, z);
  const out = join(dir, 'x.npy');
  const r = await cli(
    ...['decode', '--synthetic', '--family', 'autoencoder-kl', '--config', configFile(dir, 'kl.json', TINY_KL), '--seed', '3'],
    ...['--latents', latents, '--out', out, '--provider', 'webgpu', '--precision', 'fp16', '--force-fp16'],
    ...['--strategy', 'shard', '--ranks', '2', '--json'],
  );
  assert.equal(r.code, 0, r.stderr);
  const json = JSON.parse(r.stdout) as {
    strategy: string;
    precision: string;
    memory: { ranks: { rank: number; predictedPeakBytes: number }[] };
  };
  assert.deepEqual([json.strategy, json.precision], ['shard', 'fp16']);
  assert.equal(json.memory.ranks.length, 2);
  for (const rank of json.memory.ranks) assert.ok(rank.predictedPeakBytes > 0, `rank ${rank.rank}: predicted ${rank.predictedPeakBytes}`);
  const got = readNpy(out);
  assert.deepEqual(got.dims, api.dims);
  const { maxAbs } = difference(got, api);
  t.diagnostic(`shard: CLI vs API fp16 max abs ${maxAbs.toExponential(2)}`);
  assert.ok(maxAbs <= 1e-6 * reference.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0), `CLI vs API: max abs ${maxAbs}`);
  assertClose(t, got, reference, 'shard (CLI)');
});
