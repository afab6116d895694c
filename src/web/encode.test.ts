// The page's encoder loader (`loadWebEncoder`): `moments` is refused for a family whose encoder
// returns its latents directly (TAE here), after its weights are read and before any session
// opens — as `encode --sample` is refused in Node. (Encoding itself on WASM is checked per
// family: families/minimax-h3/encode-web.test.ts, encode/web-encoders.test.ts.)

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { getFamily, runtimeOf } from '../families/registry.js';
import { TAE_SMALL } from '../families/testing/config-files.js';
import { encodeSafetensors } from '../weights/safetensors.js';
import { syntheticWeights } from '../weights/synthetic.js';
import { loadWebEncoder } from './load.js';

test('loadWebEncoder refuses moments for TAE (no latent distribution), naming the option', async () => {
  const family = getFamily('tae');
  const config = family.resolveConfig(TAE_SMALL);
  const weights = encodeSafetensors(syntheticWeights(runtimeOf(family).encoder!.params(config), 4));
  await assert.rejects(
    loadWebEncoder({ weights, config: TAE_SMALL, family: 'tae' }, { backend: 'wasm', moments: true }),
    (e: unknown) =>
      e instanceof DistVaeError && e.code === 'UNSUPPORTED' && /moments: the tae encoder returns its latents directly/.test(e.message),
  );
});
