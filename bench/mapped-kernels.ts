// What onnxruntime's CPU EP keeps of convolution kernels given as external data (the way every
// distvae weight reaches it: a checkpoint's own bytes or a scratch file, runtime/session.ts): one
// session of 20 convolutions of 512 channels, 3-D (3×3×3 kernels, 540 MiB) or 2-D (3×3, 180 MiB),
// their kernels (and biases, so offsets are not page-aligned) appended to a scratch file, run once
// on a small input. Prints VmRSS, RssAnon, RssFile and VmHWM (MiB) before opening, after opening and
// after the run. The memory model's mapped-kernel term (src/memory/runs.ts mappedKernelSizes) reads
// the 3-D result: nothing is resident after opening, and the run pages every kernel in as
// file-backed memory (RssFile), one copy; 2-D kernels add one anonymous prepacked copy on opening.
//
//   for k in 3d 2d; do npx tsx bench/mapped-kernels.ts $k; done                      # glibc's defaults
//   for k in 3d 2d; do MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=262144 MALLOC_TRIM_THRESHOLD_=67108864 npx tsx bench/mapped-kernels.ts $k; done   # a rank process's

import { readFileSync } from 'node:fs';
import { SpillFile } from '../src/bytes/spill-file.js';
import { GraphBuilder, type Value } from '../src/graph/builder.js';
import { createSession } from '../src/runtime/session.js';
import { FileTensor } from '../src/sources/weights-file.js';
import { seededTensor } from '../src/tensor.js';

const kind = process.argv[2] ?? '3d';
if (kind !== '3d' && kind !== '2d') throw new Error(`kind: expected 3d or 2d, got ${kind}`);
const LAYERS = 20;
const C = 512;

/** The memory fields of /proc/self/status, MiB. */
function memory(): Record<string, number> {
  const status = readFileSync('/proc/self/status', 'utf8');
  const field = (name: string) => Math.round(Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)![1]) / 1024);
  return { rss: field('VmRSS'), anon: field('RssAnon'), file: field('RssFile'), peak: field('VmHWM') };
}

const spill = new SpillFile();
const kernel = kind === '3d' ? [C, C, 3, 3, 3] : [C, C, 3, 3];
const input = kind === '3d' ? [1, C, 3, 6, 6] : [1, C, 6, 6];
const g = new GraphBuilder('mapped-kernels');
let x: Value = g.input('x', input);
for (let i = 0; i < LAYERS; i++) {
  // Generated one at a time and appended: no JS copy of the weights is kept.
  const w = g.param(`l${i}.weight`, new FileTensor([...kernel], spill.append(seededTensor(kernel, i + 1, 0.01).data)));
  const b = g.param(`l${i}.bias`, new FileTensor([C], spill.append(seededTensor([C], i + 1000, 0.01).data)));
  x = g.conv(x, w, b, { pads: 1 });
}
g.output('y', x);
const model = g.toModel();
const kernelMiB = (4 * LAYERS * kernel.reduce((a, b) => a * b, 1)) / 2 ** 20;
const before = memory();
const session = await createSession(model, { intraOpThreads: 1 });
const opened = memory();
await session.run({ x: seededTensor(input, 7) });
const ran = memory();
await session.dispose();
spill.close();
console.log(JSON.stringify({ kind, kernelMiB, before, opened, ran }));
