// The page's decode (decodeInPage) run here on onnxruntime-node behind the page's own planning
// and engine: output that comes out non-finite fails every page mode (whole, tiled, exact) with
// NON_FINITE_OUTPUT naming the piece, and the result is never returned for drawing.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LazyTileRunner } from '../decode/lazy-runner.js';
import { DistVaeError } from '../errors.js';
import { runtimeOf, getFamily } from '../families/registry.js';
import { TAE_SMALL } from '../families/testing/config-files.js';
import { seededTensor } from '../tensor.js';
import { syntheticWeights } from '../weights/synthetic.js';
import { decodeInPage } from './decode.js';
import { WebVae } from './load.js';

test('a page decode whose output overflows fails in every mode, naming the whole decode or the tile', async () => {
  const family = getFamily('tae');
  const runtime = runtimeOf(family);
  const config = family.resolveConfig(TAE_SMALL);
  // TAE squashes its latents (tanh), so its weights overflow instead: finite, near float32's limit.
  const weights = new Map(
    [...syntheticWeights(runtime.decoderParams(config), 1)].map(([k, t]) => [
      k,
      { dims: t.dims, data: new Float32Array(t.data.length).fill(3e38) },
    ]),
  );
  const runner = new LazyTileRunner(() => runtime.createTileRunner(config, weights, { intraOpThreads: 1 }));
  const limits = { maxBufferSize: 2 ** 30, maxStorageBufferBindingSize: 2 ** 30, source: 'a test device' };
  const vae = new WebVae(family, config, runtime, runner, { backend: 'wasm', limits, threads: 1 }, weights);
  try {
    const z = seededTensor([1, 4, 16, 16], 3);
    const cases = [
      { mode: 'whole', names: /^the whole decode came out non-finite/ },
      { mode: 'tiled', names: /^tile \d+ came out non-finite/ },
      { mode: 'exact', names: /^tile \d+ came out non-finite: .* of the output/ },
    ] as const;
    for (const c of cases) {
      const window = c.mode === 'whole' ? {} : { window: { height: 64, width: 64 } };
      await assert.rejects(
        decodeInPage(vae, z, { mode: c.mode, ...window }),
        (e: unknown) => e instanceof DistVaeError && e.code === 'NON_FINITE_OUTPUT' && c.names.test(e.message),
        c.mode,
      );
    }
  } finally {
    await vae.dispose();
  }
});
