// Weights files of any size are read by bounded pieces: a sparse 5 GiB safetensors file (made
// with ftruncate, so it costs no disk) whose decoder tensors sit after 5 GiB of an ignored one
// is bound and read in a child process that stays far below the file's size.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, ftruncateSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const LOAD = fileURLToPath(new URL('../sources/weights-file.ts', import.meta.url));
const SOURCE = fileURLToPath(new URL('../bytes/file-source.ts', import.meta.url));
const HUGE = 5 * 2 ** 30;

/** Writes the header and the small tensors' bytes; the huge tensor's bytes stay a hole. */
function sparseFile(path: string): void {
  const header = {
    'encoder.huge': { dtype: 'F32', shape: [HUGE / 4], data_offsets: [0, HUGE] },
    'decoder.w': { dtype: 'F16', shape: [2, 2], data_offsets: [HUGE, HUGE + 8] },
    'decoder.b': { dtype: 'F32', shape: [2], data_offsets: [HUGE + 8, HUGE + 16] },
  };
  const json = Buffer.from(JSON.stringify(header));
  const fd = openSync(path, 'w');
  try {
    const length = Buffer.alloc(8);
    length.writeBigUInt64LE(BigInt(json.length));
    writeSync(fd, length, 0, 8, 0);
    writeSync(fd, json, 0, json.length, 8);
    const dataStart = 8 + json.length;
    ftruncateSync(fd, dataStart + HUGE + 16);
    writeSync(fd, Buffer.from(new Uint16Array([0x3c00, 0x4000, 0x4200, 0x4400]).buffer), 0, 8, dataStart + HUGE); // 1, 2, 3, 4
    writeSync(fd, Buffer.from(new Float32Array([0.5, -0.5]).buffer), 0, 8, dataStart + HUGE + 8);
  } finally {
    closeSync(fd);
  }
}

test('a sparse 5 GiB weights file: only the decoder tensors are read, with bounded memory', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-large-'));
  try {
    const path = join(dir, 'big.safetensors');
    try {
      sparseFile(path);
    } catch (e) {
      t.skip(`cannot create a sparse 5 GiB file here: ${(e as Error).message}`);
      return;
    }
    const script = `
      import { openWeights, readBoundWeights } from ${JSON.stringify(LOAD)};
      import { withFileSource } from ${JSON.stringify(SOURCE)};
      import { readFileSync } from 'node:fs';
      const bound = await withFileSource(${JSON.stringify(path)}, async (file) => {
        const reader = await openWeights(file);
        const expected = [{ name: 'decoder.w', dims: [2, 2] }, { name: 'decoder.b', dims: [2] }];
        return readBoundWeights(reader, reader.entries, expected, { ignorePrefixes: ['encoder.'] });
      });
      const peak = Number(/VmHWM:\\s+(\\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
      console.log(JSON.stringify({ w: [...bound.get('decoder.w').data], b: [...bound.get('decoder.b').data], peak }));`;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(child.status, 0, child.stderr);
    const got = JSON.parse(child.stdout) as { w: number[]; b: number[]; peak: number };
    assert.deepEqual(
      [got.w, got.b],
      [
        [1, 2, 3, 4],
        [0.5, -0.5],
      ],
    );
    assert.ok(got.peak < 300 * 2 ** 20, `peak RSS ${(got.peak / 2 ** 20).toFixed(0)} MiB reading 16 bytes of a 5 GiB file`);
  } finally {
    rmSync(dir, { recursive: true });
  }
});
