// Peak RSS of loading a multi-GiB weights file and decoding a tiny latent with it (issue 17's
// fixed-cost bound: peak ≤ 2 × decoder weight bytes + 150 MiB). The file is a diffusers VAE
// folder written here tensor by tensor, never whole in memory: the decoder's tensors (seeded
// synthetic values, float32) plus unrelated `encoder.` tensors — sparse zeros — that pad the
// file past `--pad-to` GiB, which the loader must never read. `--config ltx2` is LTX-2's
// published decoder (float32 1.97 GiB, the largest of the families; its graph goes through
// external data and staged sessions); `--config sd` is SD 1.x's. One decode runs under
// /usr/bin/time in its own process.
// Usage: npx tsx bench/large-weights.ts [--config ltx2|sd] [--pad-to 2.5] [--keep DIR]

import { spawnSync } from 'node:child_process';
import { closeSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { planningVae, runtimeOf } from '../src/families/registry.js';
import { writeNpy } from '../src/io/npy.js';
import { elementCount, seededTensor } from '../src/tensor.js';
import { syntheticWeights } from '../src/weights/synthetic.js';

const { values } = parseArgs({
  options: { config: { type: 'string', default: 'ltx2' }, 'pad-to': { type: 'string', default: '2.5' }, keep: { type: 'string' } },
});
const CASES: Record<string, { config: Record<string, unknown>; latent: number[]; family: string }> = {
  // LTX-2.0's published config.json states its ratios (the class defaults are other ones).
  ltx2: {
    family: 'ltx2',
    config: { _class_name: 'AutoencoderKLLTX2Video', spatial_compression_ratio: 32, temporal_compression_ratio: 8, decoder_causal: false },
    latent: [1, 128, 1, 2, 2],
  },
  sd: {
    family: 'autoencoder-kl',
    config: {
      _class_name: 'AutoencoderKL',
      block_out_channels: [128, 256, 512, 512],
      layers_per_block: 2,
      norm_num_groups: 32,
      latent_channels: 4,
    },
    latent: [1, 4, 8, 8],
  },
};
const c = CASES[values.config!];
if (!c) throw new Error(`--config ${values.config}: one of ${Object.keys(CASES).join(', ')}`);
const vae = planningVae(c.family, c.config);
const params = runtimeOf(vae.family).decoderParams(vae.config);
const decoderBytes = params.reduce((s, p) => s + elementCount(p.dims) * 4, 0);
const padTo = Number(values['pad-to']) * 2 ** 30;

const dir = values.keep ?? mkdtempSync(join(tmpdir(), 'distvae-large-weights-'));
mkdirSync(dir, { recursive: true });
try {
  writeFileSync(join(dir, 'config.json'), JSON.stringify(c.config));
  // Header: the decoder's tensors, then padding tensors of 256 MiB each until the file is large enough.
  const entries: { name: string; dims: number[]; bytes: number }[] = params.map((p) => ({
    name: p.name,
    dims: [...p.dims],
    bytes: elementCount(p.dims) * 4,
  }));
  const PAD = 64 * 2 ** 20; // float32 elements: 256 MiB
  for (let i = 0, total = decoderBytes; total < padTo; i++, total += PAD * 4)
    entries.push({ name: `encoder.padding.${i}.weight`, dims: [PAD], bytes: PAD * 4 });
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const e of entries) {
    header[e.name] = { dtype: 'F32', shape: e.dims, data_offsets: [offset, offset + e.bytes] };
    offset += e.bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + json.length) % 8)) % 8);
  const path = join(dir, 'diffusion_pytorch_model.safetensors');
  const fd = openSync(path, 'w');
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  writeSync(fd, length, 0, 8, 0);
  writeSync(fd, Buffer.from(json), 0, json.length, 8);
  const dataStart = 8 + json.length;
  let at = dataStart;
  for (const p of params) {
    const t = syntheticWeights([p], 1).get(p.name)!;
    writeSync(fd, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), 0, t.data.byteLength, at);
    at += t.data.byteLength;
  }
  ftruncateSync(fd, dataStart + offset); // the padding stays a hole: zeros never written
  closeSync(fd);
  const z = join(dir, 'z.npy');
  writeNpy(z, seededTensor(c.latent, 2));
  const run = spawnSync(
    '/usr/bin/time',
    [
      '-f',
      '%M %U %S',
      process.execPath,
      '--import',
      'tsx',
      'src/cli/main.ts',
      'decode',
      '--vae',
      dir,
      '--latents',
      z,
      '--out',
      join(dir, 'x.npy'),
      '--threads',
      '1',
      '--json',
    ],
    { encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(`decode failed (${run.status}): ${run.stderr.slice(-2000)}`);
  const [peakKiB, user, sys] = run.stderr.trim().split('\n').at(-1)!.split(' ').map(Number) as [number, number, number];
  const peakMiB = Math.round(peakKiB / 1024);
  const boundMiB = Math.round((2 * decoderBytes) / 2 ** 20 + 150);
  const report = {
    config: values.config,
    fileBytes: statSync(path).size,
    decoderWeightBytes: decoderBytes,
    latent: c.latent,
    shape: (JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { shape: number[] }).shape,
    peakMiB,
    boundMiB,
    ratioToWeights: Math.round((peakKiB * 1024 * 1000) / decoderBytes) / 1000,
    withinBound: peakMiB <= boundMiB,
    cpuSeconds: Math.round((user + sys) * 10) / 10,
  };
  console.log(
    `${values.config}: file ${(report.fileBytes / 2 ** 30).toFixed(2)} GiB, decoder weights ${(decoderBytes / 2 ** 20).toFixed(0)} MiB, peak ${peakMiB} MiB (bound ${boundMiB} MiB: ${report.withinBound ? 'within' : 'OVER'}), ${report.cpuSeconds} CPU s`,
  );
  console.log(JSON.stringify(report));
} finally {
  if (values.keep === undefined) rmSync(dir, { recursive: true, force: true });
}
