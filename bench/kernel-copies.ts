// What onnxruntime's CPU EP keeps of convolution kernels by their shape: one process per kind
// opens a session whose weights are all 1×1 kernels (96 × 1024² floats), all 3×3 kernels
// (43 × 512²×9 floats: the same ~385 MiB) or none, runs it once on a 8×8 input, and prints its
// RSS before opening, after opening and after the run, and its peak (VmHWM), in MiB. The
// memory model's packed-kernel term (src/memory/runs.ts conv2dWeightBytes) reads the difference.
//
//   for k in none 1x1 3x3; do node --import tsx bench/kernel-copies.ts $k; done

import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GraphBuilder, type Value } from '../src/graph/builder.js';
import { createSession } from '../src/runtime/session.js';
import { seededTensor } from '../src/tensor.js';

/** VmRSS or VmHWM of this process, MiB. */
const status = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;
const kind = process.argv[2] ?? 'none';
if (process.argv[3]) await open(kind, process.argv[3]);
else build(kind);

function build(kind: string): void {
  if (!['none', '1x1', '3x3'].includes(kind)) throw new Error(`kind: expected none, 1x1 or 3x3, got ${kind}`);
  const channels = kind === '1x1' ? 1024 : 512;
  const k = kind === '1x1' ? 1 : 3;
  const layers = kind === 'none' ? 0 : kind === '1x1' ? 96 : 43;
  const g = new GraphBuilder('kernels');
  let x: Value = g.input('x', [1, channels, 8, 8]);
  for (let i = 0; i < layers; i++) {
    const w = g.param(`l${i}.weight`, seededTensor([channels, channels, k, k], i + 1, 0.01));
    const b = g.param(`l${i}.bias`, seededTensor([channels], i + 1000, 0.01));
    x = g.relu(g.conv(x, w, b, { pads: k === 3 ? 1 : 0 }));
  }
  g.output('y', layers ? x : g.relu(x));
  // The model goes through a file so that this process holds no JS copy of the weights but the
  // bytes onnxruntime is given (dropped once the session is open).
  const file = join(tmpdir(), `distvae-kernel-copies-${process.pid}.onnx`);
  writeFileSync(file, g.toModelBytes());
  const child = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), kind, file], { encoding: 'utf8' });
  rmSync(file, { force: true });
  process.stdout.write(child.stdout + child.stderr);
}

async function open(kind: string, file: string): Promise<void> {
  const layers = kind === 'none' ? 0 : kind === '1x1' ? 96 : 43;
  const channels = kind === '1x1' ? 1024 : 512;
  const k = kind === '1x1' ? 1 : 3;
  const beforeOpen = status('VmRSS');
  let bytes: Uint8Array | null = readFileSync(file);
  const session = await createSession(bytes, { intraOpThreads: 1 });
  bytes = null;
  const afterOpen = status('VmRSS');
  await session.run({ x: seededTensor([1, channels, 8, 8], 7) });
  const weightsMiB = (4 * layers * channels * channels * k * k) / 2 ** 20;
  console.log(JSON.stringify({ kind, weightsMiB, beforeOpen, afterOpen, afterRun: status('VmRSS'), peak: status('VmHWM') }));
}
