// `distvae demo` says what it decodes: synthetic weights (noise, with the way to a trained model),
// or the trained image decoder --vae names (here a TAESD decoder file), and refuses --family
// without --vae.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { tae } from '../../families/tae/spec.js';
import { taeRuntime } from '../../families/tae/runtime.js';
import { readImage } from '../../io/image.js';
import { writeSafetensors } from '../../weights/safetensors.js';
import { syntheticWeights } from '../../weights/synthetic.js';
import { cli } from '../testing/in-process.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-demo-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('the default demo says its weights are synthetic and how to decode with a trained model', async () => {
  const run = await cli('demo', '--out-dir', join(dir, 'synthetic'));
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /^synthetic weights: .* not a picture; pass --vae/);
});

test('demo --vae decodes with the trained decoder it names; --family without --vae is refused', async () => {
  const decoder = join(dir, 'taesd_decoder.safetensors');
  writeSafetensors(decoder, syntheticWeights(taeRuntime.decoderParams(tae.resolveConfig({ variant: 'taesd' })), 5));
  const out = join(dir, 'tae');
  const run = await cli('demo', '--vae', decoder, '--family', 'tae', '--out-dir', out);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /^trained weights: .*taesd_decoder\.safetensors \(tae\)/);
  assert.deepEqual(readImage(join(out, 'demo.png')).dims.slice(2), [512, 768]);
  const refused = await cli('demo', '--family', 'tae');
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /--family and --config name the model of --vae/);
});
