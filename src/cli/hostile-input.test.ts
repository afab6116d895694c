// Careless and hostile input to `distvae`, generated here (no committed binaries): each case is
// refused before any work with exit code 2 (3 for a runtime failure), a message naming the
// value, no stack trace, nothing written — and, for the cases spawned as a process, a peak RSS
// far below what the input asks for (a refused input never takes the process past 400 MiB).

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { resolveFamily, resolveFamilyConfig, runtimeOf } from '../families/registry.js';
import { writeNpy } from '../io/npy.js';
import { seededLatent } from '../ranks/testing/tiny-vae.js';
import { readVaeSource, DIFFUSERS_WEIGHTS_FILE } from '../sources/vae-source.js';
import { writeSafetensors } from '../weights/safetensors.js';
import { checkWeightBytes, DECODING_WEIGHT_COPIES } from '../sources/weight-budget.js';
import { defaultMemoryBudget } from '../runtime/memory-budget.js';
import { runCliProcess } from './testing/cli-process.js';
import { cli } from './testing/in-process.js';
import { KL_SMALL } from '../families/testing/config-files.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-hostile-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const TINY = { ...KL_SMALL, sample_size: 64 };
const config = join(dir, 'tiny.json');
writeFileSync(config, JSON.stringify(TINY));
const latents = join(dir, 'z.npy');
writeNpy(latents, seededLatent(8, 8));
const SYNTHETIC = ['--synthetic', '--config', config, '--latents', latents];
mkdirSync(join(dir, 'batch'));
for (const name of ['a', 'b']) writeNpy(join(dir, 'batch', `${name}.npy`), seededLatent(8, 8));
const batchBytes = readFileSync(join(dir, 'batch', 'a.npy')).length;
const REFUSED_RSS_BYTES = 400 * 2 ** 20;

function assertClean(stderr: string): void {
  assert.doesNotMatch(stderr, /^\s+at .+[(:]\d+/m, `stack trace in ${stderr}`);
  assert.doesNotMatch(stderr, /internal error|ambiguous/, stderr);
}

/** Files in the test folder other than the inputs: a refusal writes nothing. */
function written(): string[] {
  return readdirSync(dir).filter((f) => !['tiny.json', 'z.npy', 'nan', 'inf', 'cfg', 'cfg-folder', 'batch'].includes(f));
}

const refusals: { name: string; argv: string[]; code?: number; says: RegExp }[] = [
  {
    name: '--ranks -1',
    argv: ['decode', ...SYNTHETIC, '--out', join(dir, 'o.png'), '--ranks', '-1'],
    says: /--ranks "-1" is not an integer in \[1, 1024\]/,
  },
  {
    name: '--ranks ""',
    argv: ['decode', ...SYNTHETIC, '--out', join(dir, 'o.png'), '--ranks', ''],
    says: /--ranks is given an empty value/,
  },
  {
    name: '--out twice',
    argv: ['decode', ...SYNTHETIC, '--out', join(dir, 'a.png'), '--out', join(dir, 'b.png')],
    says: /--out is given 2 times/,
  },
  {
    name: '--seed with --vae',
    argv: ['decode', '--vae', config, '--seed', '3', '--latents', latents, '--out', join(dir, 'o.png')],
    says: /--seed seeds synthetic weights/,
  },
  {
    name: '--isolation without --ranks',
    argv: ['decode', ...SYNTHETIC, '--out', join(dir, 'o.png'), '--isolation', 'process'],
    says: /--isolation says how --ranks are run/,
  },
  {
    name: '--bit-depth 16 with .npy',
    argv: ['decode', ...SYNTHETIC, '--out', join(dir, 'o.npy'), '--bit-depth', '16'],
    says: /--bit-depth applies only to PNG output/,
  },
  {
    name: '--out in a missing folder',
    argv: ['decode', ...SYNTHETIC, '--out', join(dir, 'missing', 'o.png')],
    says: /the folder .*missing does not exist/,
  },
  { name: '--out is the --latents file', argv: ['decode', ...SYNTHETIC, '--out', join(dir, '.', 'z.npy')], says: /is the --latents file/ },
  {
    name: '--threads with --redis',
    argv: ['decode', ...SYNTHETIC, '--out', join(dir, 'o.png'), '--redis', 'redis://127.0.0.1:1', '--threads', '4'],
    says: /--threads sets how ranks decode; with --redis .* give --threads to each worker/,
  },
  {
    name: '--device with --redis',
    argv: ['decode', ...SYNTHETIC, '--out', join(dir, 'o.png'), '--redis', 'redis://127.0.0.1:1', '--device', '0'],
    says: /--device sets how ranks decode/,
  },
  {
    name: '--out-dir over the latents folder in their own format',
    argv: [
      'decode',
      '--synthetic',
      '--config',
      config,
      '--latents',
      join(dir, 'batch', '*.npy'),
      '--out-dir',
      join(dir, 'batch'),
      '--out-format',
      'npy',
    ],
    says: /--out-dir .*batch would write 2 output\(s\) over the --latents files they decode/,
  },
  { name: '--out is a folder', argv: ['decode', ...SYNTHETIC, '--out', dir + '/'], says: /must end in|is a folder/ },
];

for (const c of refusals) {
  test(`refused before any work: ${c.name}`, async () => {
    const before = readFileSync(latents);
    const r = await cli(...c.argv);
    assert.equal(r.code, c.code ?? 2, r.stderr);
    assert.match(r.stderr, c.says);
    assertClean(r.stderr);
    assert.deepEqual(written(), []);
    assert.deepEqual(readFileSync(latents), before, 'the input is untouched');
    assert.deepEqual(readdirSync(join(dir, 'batch')), ['a.npy', 'b.npy']);
    assert.equal(readFileSync(join(dir, 'batch', 'a.npy')).length, batchBytes, 'the batch inputs are untouched');
  });
}

test('--version prints the package version; help decode prints the decode help', async () => {
  const version = await cli('--version');
  assert.equal(version.code, 0);
  assert.equal(version.stdout, `distvae ${JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version}\n`);
  const help = await cli('help', 'decode');
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^distvae decode — /);
  assert.equal(help.stdout, (await cli('decode', '--help')).stdout);
});

test("--ranks 16 on a one-tile latent starts one rank with the cores' threads, and the JSON says so", async () => {
  const out = join(dir, 'one-tile.png');
  const r = await cli('decode', ...SYNTHETIC, '--out', out, '--ranks', '16', '--json');
  assert.equal(r.code, 0, r.stderr);
  const body = JSON.parse(r.stdout);
  assert.equal(body.tiles, 1);
  assert.equal(body.ranks.length, 1);
  assert.equal(body.ranksRequested, 16);
  // The whole decode fits: it runs on one rank that takes this machine's cores, and says so.
  assert.equal(body.choice.strategy, 'whole');
  assert.equal(body.choice.threads, availableParallelism());
  assert.match(body.choice.reason, /whole decode on one rank with this machine's \d+ intra-op threads \(the 16 ranks share its cores\)/);
  rmSync(out);
});

test('a NaN in the weights is refused at load, naming the tensor; a decode that overflows names its tile and writes nothing', async () => {
  const source = { family: 'autoencoder-kl', config: TINY, weights: 'synthetic' as const, seed: 0 };
  const { weights } = await readVaeSource(source);
  const folder = (name: string, edit: (w: Map<string, { dims: readonly number[]; data: Float32Array }>) => void) => {
    const path = join(dir, name);
    mkdirSync(path);
    const copy = new Map([...weights].map(([k, t]) => [k, { dims: t.dims, data: Float32Array.from(t.data) }]));
    edit(copy);
    writeFileSync(join(path, 'config.json'), JSON.stringify(TINY));
    writeSafetensors(join(path, DIFFUSERS_WEIGHTS_FILE), copy);
    return path;
  };
  const nan = folder('nan', (w) => (w.get('decoder.conv_in.weight')!.data[5] = NaN));
  const r = await cli('decode', '--vae', nan, '--latents', latents, '--out', join(dir, 'nan.png'));
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /weight decoder\.conv_in\.weight .* holds NaN at element 5/);
  assertClean(r.stderr);
  // Finite weights near float32's limit: the first convolution overflows to ±Infinity.
  const inf = folder('inf', (w) => w.get('decoder.conv_in.weight')!.data.fill(3e38));
  const o = await cli('decode', '--vae', inf, '--latents', latents, '--out', join(dir, 'inf.png'));
  assert.equal(o.code, 3, o.stderr);
  assert.match(o.stderr, /tile 0 \(rank 0\) came out non-finite: (NaN|-?Infinity) at \(b, c, y, x\) = \(\d+, \d+, \d+, \d+\)/);
  assertClean(o.stderr);
  assert.deepEqual(written(), []);
});

test('block_out_channels of 4096 is refused by its predicted weight bytes against the budget, before any weight exists', () => {
  const family = resolveFamily('autoencoder-kl', undefined);
  const resolved = resolveFamilyConfig(family, { block_out_channels: [4096, 4096], norm_num_groups: 32 });
  const params = runtimeOf(family).decoderParams(resolved);
  assert.throws(
    () => checkWeightBytes(params, 'the test decoder', 4 * 2 ** 30),
    (e: Error & { code?: string }) =>
      e.code === 'CONFIG_INVALID' && /declares 9\.81 GiB of float32 weights .* memory budget of 4\.00 GiB/.test(e.message),
  );
});

test('plan at 262144² answers (no stack overflow, linear in its 466489 tiles)', async () => {
  const r = await cli('plan', '--family', 'autoencoder-kl', '--height', '262144', '--width', '262144');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /tiles 683x683 = 466489/);
});

// As processes: exit code, message, and a peak RSS that shows nothing was allocated for the request.
const spawned: { name: string; argv: string[]; says: RegExp; skip?: () => string | false; env?: Record<string, string> }[] = [
  // Widths are judged by the weight bytes they declare against the default budget, before a plan or a weight exists.
  {
    name: 'block_out_channels of 1e9',
    argv: [
      'decode',
      '--synthetic',
      '--config',
      'cfg:{"_class_name":"AutoencoderKL","block_out_channels":[1000000000],"norm_num_groups":4}',
      '--latents',
      latents,
      '--out',
      join(dir, 'o.png'),
    ],
    says: /CONFIG_INVALID: the autoencoder-kl decoder declares [\d.]+ GiB of float32 weights .* more than the memory budget of [\d.]+ GiB/,
  },
  {
    name: 'block_out_channels of 4096 on a folder',
    argv: [
      'decode',
      '--vae',
      'dir:{"_class_name":"AutoencoderKL","block_out_channels":[4096,4096],"norm_num_groups":32}',
      '--latents',
      latents,
      '--out',
      join(dir, 'o.png'),
    ],
    says: /declares 9\.81 GiB of float32 weights .* more than the memory budget/,
    skip: () => (DECODING_WEIGHT_COPIES * 9.81 * 2 ** 30 < 0.9 * defaultMemoryBudget() ? 'this machine can hold 4096-wide weights' : false),
  },
  // Depths: a structural bound (their weights may be small; their parameter list and graph are not).
  {
    name: 'layers_per_block of 100000',
    argv: [
      'decode',
      '--synthetic',
      '--config',
      'cfg:{"_class_name":"AutoencoderKL","block_out_channels":[8,16],"layers_per_block":100000,"norm_num_groups":4}',
      '--latents',
      latents,
      '--out',
      join(dir, 'o.png'),
    ],
    says: /layers_per_block = 100000 is invalid/,
  },
  {
    name: '8192 levels of 8192 layers',
    argv: [
      'decode',
      '--synthetic',
      '--config',
      `cfg:{"_class_name":"AutoencoderKL","block_out_channels":[${new Array(8192).fill(8).join(',')}],"layers_per_block":8192,"norm_num_groups":4}`,
      '--latents',
      latents,
      '--out',
      join(dir, 'o.png'),
    ],
    says: /make a decoder of 67117056 repeated blocks, more than 4096/,
  },
  {
    name: '--config /dev/zero',
    argv: ['decode', '--synthetic', '--config', '/dev/zero', '--latents', latents, '--out', join(dir, 'o.png')],
    says: /\/dev\/zero is a device, not a regular file/,
  },
  {
    // The Vulkan driver CI installs (lavapipe) is hidden from this child: no adapter is left.
    name: '--provider webgpu without an adapter (or an unknown provider)',
    argv: ['decode', ...SYNTHETIC, '--out', join(dir, 'o.png'), '--provider', 'webgpu'],
    env: { VK_ICD_FILENAMES: '/nonexistent' },
    says: /PROVIDER_UNAVAILABLE: execution provider 'webgpu' is not available/,
  },
];
for (const c of spawned) {
  test(`as a process: ${c.name}`, { skip: c.skip?.() ?? false }, async (t) => {
    const argv = c.argv.map((a) => {
      if (a.startsWith('dir:')) {
        // A diffusers folder whose config declares the weights (the weights file is never opened).
        mkdirSync(join(dir, 'cfg-folder'), { recursive: true });
        writeFileSync(join(dir, 'cfg-folder', 'config.json'), a.slice(4));
        writeFileSync(join(dir, 'cfg-folder', DIFFUSERS_WEIGHTS_FILE), '');
        return join(dir, 'cfg-folder');
      }
      if (!a.startsWith('cfg:')) return a;
      const path = join(dir, 'cfg');
      writeFileSync(path, a.slice(4));
      return path;
    });
    const r = await runCliProcess(argv, c.env ? { env: c.env } : {});
    // VK_ICD_FILENAMES hides Vulkan drivers only: elsewhere (D3D12, Metal) an adapter may remain.
    if (c.name.startsWith('--provider') && r.code === 0 && process.platform !== 'linux') return t.skip('this machine has a WebGPU adapter');
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, c.says);
    assertClean(r.stderr);
    assert.doesNotMatch(r.stderr, /Couldn't load Vulkan|Warning:/, 'native provider lines stay off the terminal');
    if (r.peakRssBytes !== null) assert.ok(r.peakRssBytes < REFUSED_RSS_BYTES, `peak RSS ${(r.peakRssBytes / 2 ** 20).toFixed(0)} MiB`);
    assert.equal(existsSync(join(dir, 'o.png')), false);
  });
}
