// `distvae decode --provider webgpu` as a process: the terminal shows distvae's own lines only —
// the GPU drivers' (Dawn's "Warning: … artificially reduced", the Vulkan loader's, Mesa's) stay
// off it unless --verbose — and the summary and the JSON say which provider and adapters decoded;
// `distvae devices` lists the adapters, and an adapter this machine lacks is refused up front.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { KL_SMALL } from '../../families/testing/config-files.js';
import { writeNpy } from '../../io/npy.js';
import { seededLatent } from '../../ranks/testing/tiny-vae.js';
import { isNativeOutputLine } from '../../runtime/native-output.js';
import { needsWebgpu } from '../../runtime/testing/webgpu-adapter.js';
import { runCliProcess } from '../testing/cli-process.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-webgpu-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const config = join(dir, 'tiny.json');
writeFileSync(config, JSON.stringify({ ...KL_SMALL, sample_size: 64 }));
const latents = join(dir, 'z.npy');
writeNpy(latents, seededLatent(8, 8));
// Two rank processes each open the device (Dawn warns once per process on lavapipe).
const DECODE = [
  'decode',
  '--synthetic',
  '--config',
  config,
  '--latents',
  latents,
  '--provider',
  'webgpu',
  '--window',
  '12x12',
  '--ranks',
  '2',
];

const nativeLines = (stderr: string) => stderr.split('\n').filter(isNativeOutputLine);

test('decode --provider webgpu: no driver lines on the terminal, the provider in the summary and the JSON; --verbose shows them', async (t) => {
  if (!(await needsWebgpu(t))) return;
  const quiet = await runCliProcess([...DECODE, '--out', join(dir, 'a.npy')]);
  assert.equal(quiet.code, 0, quiet.stderr);
  assert.deepEqual(nativeLines(quiet.stderr), []);
  assert.match(quiet.stdout, /^decoded \[1, 3, 16, 16\] in [\d.]+ s on webgpu \(4 tile\(s\) over 2 process ranks/);

  // Both ranks pinned to adapter 0 (the only one CI has), reported per rank.
  const verbose = await runCliProcess([...DECODE, '--out', join(dir, 'b.npy'), '--verbose', '--json', '--device', '0,0']);
  assert.equal(verbose.code, 0, verbose.stderr);
  const json = JSON.parse(verbose.stdout) as { provider: string; devices: number[]; ranks: unknown[] };
  assert.equal(json.provider, 'webgpu');
  assert.deepEqual(json.devices, [0, 0]);
  assert.equal(json.ranks.length, 2);
  const shown = nativeLines(verbose.stderr);
  t.diagnostic(`--verbose: ${shown.length} driver line(s): ${shown[0] ?? 'none'}`);
  // lavapipe (CI's adapter) always has Dawn reduce its dynamic buffer limits; another adapter may print nothing.
  if (process.env.CI === 'true')
    assert.ok(
      shown.some((l) => /artificially reduced/.test(l)),
      verbose.stderr,
    );
});

test('devices --json lists adapter 0 here; decode --device with an adapter this machine lacks exits 2 before any work', async (t) => {
  const refused = await runCliProcess([...DECODE, '--out', join(dir, 'd.npy'), '--device', '0,9']);
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.stderr, /--device\[1\] 9: no such WebGPU adapter here/);
  if (!(await needsWebgpu(t))) return;
  const listed = await runCliProcess(['devices', '--json']);
  assert.equal(listed.code, 0, listed.stderr);
  const listing = JSON.parse(listed.stdout) as { adapters: { id: number; name: string }[]; notes: string[] };
  assert.equal(listing.adapters[0]!.id, 0);
  assert.ok(listing.notes.some((n) => /several GPUs are untested/.test(n)));
});

test('decode --provider cpu reports its provider too', async () => {
  const r = await runCliProcess([...DECODE.map((a) => (a === 'webgpu' ? 'cpu' : a)), '--out', join(dir, 'c.npy'), '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal((JSON.parse(r.stdout) as { provider: string }).provider, 'cpu');
});
