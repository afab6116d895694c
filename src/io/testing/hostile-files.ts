// Test support: the hostile-file corpus of the readers (issue 16's memory bombs and malformed
// files), generated into a folder at test time. `runHostileCases` runs each case in this
// process and reports the error it got; run it in a child process to measure the peak RSS a
// refused input costs (VmHWM after all cases bounds every one of them).

import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { unzipSync, zipSync } from 'fflate';
import { PNG } from 'pngjs';
import { loadVae } from '../../decode/vae.js';
import { DistVaeError } from '../../errors.js';
import { buildPth } from '../../weights/pth-fixture.js';
import { readPth } from '../../weights/pth.js';
import { readWeights } from '../../sources/weights-file.js';
import { readImage } from '../image.js';
import { readLatents } from '../latents.js';
import { readNpy } from '../npy.js';

export interface HostileCase {
  readonly name: string;
  /** The DistVaeError code the case must end in. */
  readonly code: string;
  readonly message: RegExp;
  run(dir: string): Promise<unknown>;
}

export interface HostileOutcome {
  name: string;
  code: string | null;
  message: string;
  /** True when the error was not a DistVaeError (an internal error leaked). */
  internal: boolean;
}

const one = Float32Array.from([0]);

/** A zip entry's declared uncompressed size rewritten in its local header and central directory. */
function declareSize(zip: Uint8Array, entryName: string, size: number): Uint8Array {
  const out = zip.slice();
  const view = new DataView(out.buffer);
  const name = new TextEncoder().encode(entryName);
  const matches = (at: number): boolean => name.every((b, i) => out[at + i] === b);
  for (let at = 0; at + 46 < out.length; at++) {
    const sig = view.getUint32(at, true);
    if (sig === 0x04034b50 && view.getUint16(at + 26, true) === name.length && matches(at + 30)) view.setUint32(at + 22, size, true);
    if (sig === 0x02014b50 && view.getUint16(at + 28, true) === name.length && matches(at + 46)) view.setUint32(at + 24, size, true);
  }
  return out;
}

/** A PNG that is only an IHDR declaring `width` x `height` and an IEND (CRCs unchecked: refused first). */
function pngDeclaring(width: number, height: number): Uint8Array {
  const bytes = new Uint8Array(8 + 25 + 12);
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const view = new DataView(bytes.buffer);
  view.setUint32(8, 13);
  bytes.set(new TextEncoder().encode('IHDR'), 12);
  view.setUint32(16, width);
  view.setUint32(20, height);
  bytes.set([8, 6, 0, 0, 0], 24);
  bytes.set(new TextEncoder().encode('IEND'), 8 + 25 + 4);
  return bytes;
}

function expandedPth(n: number): Uint8Array {
  return buildPth({
    storages: { '0': { dtype: 'F32', values: one } },
    tensors: { '1.weight': { storage: '0', size: [n, n, 1, 1], stride: [0, 0, 0, 0] } },
  });
}

/** torch.save of one 2-element tensor whose storage's zip entry is deflated and declares 4 GiB - 1. */
function inflatingPth(): Uint8Array {
  const files = unzipSync(
    buildPth({ storages: { '0': { dtype: 'F32', values: Float32Array.from([1, 2]) } }, tensors: { w: { storage: '0', size: [2] } } }),
  );
  const zipped = zipSync(Object.fromEntries(Object.entries(files).map(([n, d]) => [n, [d, { level: n.endsWith('data/0') ? 9 : 0 }]])));
  return declareSize(zipped, 'archive/data/0', 0xffffffff);
}

export const HOSTILE_CASES: readonly HostileCase[] = [
  {
    name: '.pth expand(30000, 30000) of one element, read whole',
    code: 'FILE_INVALID',
    message: /a view of 900000000 elements over 1 stored ones \(an expanded view\)/,
    run: async (dir) => (writeFileSync(join(dir, 'expand.pth'), expandedPth(30000)), readPth(join(dir, 'expand.pth'))),
  },
  {
    // Its shapes imply a 30000-channel latent (a width, judged by bytes: small enough), and the
    // view's shape is not the one that config's first convolution has.
    name: '.pth expand(30000, 30000) loaded as a decoder: refused from its shapes before any value is read',
    code: 'WEIGHTS_MISMATCH',
    message: /1\.weight has shape \[30000, 30000, 1, 1\] .* the decoder expects \[64, 30000, 3, 3\]/,
    run: async (dir) => (writeFileSync(join(dir, 'expand.pth'), expandedPth(30000)), loadVae(join(dir, 'expand.pth'), { family: 'tae' })),
  },
  {
    name: '.pth expand(1e7, 1e7)',
    code: 'FILE_INVALID',
    message: /a view of 100000000000000 elements over 1 stored ones/,
    run: async (dir) => (writeFileSync(join(dir, 'expand7.pth'), expandedPth(1e7)), readPth(join(dir, 'expand7.pth'))),
  },
  {
    name: '.pth storage entry declaring 4 GiB for an 8-byte tensor',
    code: 'FILE_INVALID',
    message: /storage 0 has 4294967295 bytes, torch\.FloatStorage of 2 elements needs 8/,
    run: async (dir) => (writeFileSync(join(dir, 'inflate.pth'), inflatingPth()), readWeights(join(dir, 'inflate.pth'))),
  },
  {
    name: 'empty .pth',
    code: 'FILE_INVALID',
    message: /file is empty \(0 bytes\)/,
    run: async (dir) => (writeFileSync(join(dir, 'empty.pth'), ''), readWeights(join(dir, 'empty.pth'))),
  },
  {
    name: 'non-zip .pth',
    code: 'FILE_INVALID',
    message: /not a zip-format PyTorch checkpoint/,
    run: async (dir) => (
      writeFileSync(join(dir, 'text.pth'), 'hello, not a checkpoint'),
      loadVae(join(dir, 'text.pth'), { family: 'tae' })
    ),
  },
  ...(['zero', 'urandom'] as const)
    .flatMap((device) => [
      { name: `/dev/${device} as latents .npy`, file: `${device}.npy`, read: (p: string) => readLatents(p) },
      { name: `/dev/${device} as .npy`, file: `${device}2.npy`, read: async (p: string) => readNpy(p) },
      { name: `/dev/${device} as latents .safetensors`, file: `${device}.safetensors`, read: (p: string) => readLatents(p) },
      { name: `/dev/${device} as a .pth decoder`, file: `${device}.pth`, read: (p: string) => loadVae(p, { family: 'tae' }) },
      {
        name: `/dev/${device} as a .safetensors decoder`,
        file: `${device}-w.safetensors`,
        read: (p: string) => loadVae(p, { family: 'tae' }),
      },
    ])
    .map((c, i): HostileCase => ({
      name: c.name,
      code: 'FILE_INVALID',
      message: /is a device, not a regular file/,
      run: async (dir) => {
        const device = c.name.includes('zero') ? '/dev/zero' : '/dev/urandom';
        const path = join(dir, `${i}-${c.file}`);
        symlinkSync(device, path);
        return c.read(path);
      },
    })),
  {
    name: 'PNG declaring 20000 x 20000',
    code: 'FILE_INVALID',
    message: /declares 20000 x 20000 pixels; images of at most 268435456 pixels/,
    run: async (dir) => (writeFileSync(join(dir, 'huge.png'), pngDeclaring(20000, 20000)), readImage(join(dir, 'huge.png'))),
  },
  {
    name: 'PNG declaring 2^31 pixels',
    code: 'FILE_INVALID',
    message: /declares 65536 x 32768 pixels/,
    run: async (dir) => (writeFileSync(join(dir, 'huge2.png'), pngDeclaring(65536, 32768)), readImage(join(dir, 'huge2.png'))),
  },
  {
    name: 'truncated PNG',
    code: 'FILE_INVALID',
    message: /not a valid PNG: .*\(truncated\?\)/,
    run: async (dir) => {
      const png = new PNG({ width: 64, height: 64 });
      png.data.fill(200);
      const bytes = PNG.sync.write(png);
      writeFileSync(join(dir, 'cut.png'), bytes.subarray(0, bytes.length - 40));
      return readImage(join(dir, 'cut.png'));
    },
  },
];

export async function runHostileCases(dir: string): Promise<HostileOutcome[]> {
  const outcomes: HostileOutcome[] = [];
  for (const c of HOSTILE_CASES) {
    try {
      await c.run(dir);
      outcomes.push({ name: c.name, code: null, message: 'accepted', internal: false });
    } catch (e) {
      outcomes.push({
        name: c.name,
        code: e instanceof DistVaeError ? e.code : null,
        message: (e as Error).message,
        internal: !(e instanceof DistVaeError),
      });
    }
  }
  return outcomes;
}

/** Peak resident set size of this process so far, in bytes (Linux). */
export function peakRssBytes(): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : Number.NaN;
}

// Run as a script: cases into the folder given, outcomes and peak RSS as JSON on stdout.
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const outcomes = await runHostileCases(process.argv[2]!);
  process.stdout.write(JSON.stringify({ outcomes, peakRssBytes: peakRssBytes() }));
}
