import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { tensor } from '../tensor.js';
import { readWeights } from './weights-file.js';
import { buildPth } from '../weights/pth-fixture.js';
import { writeSafetensors } from '../weights/safetensors.js';

test('picks the format from the content, not the extension', () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-load-'));
  try {
    const pth = join(dir, 'model.bin');
    writeFileSync(pth, buildPth({ storages: { '0': { dtype: 'F16', values: Float32Array.from([1, 2]) } }, tensors: { w: { storage: '0', size: [2] } } }));
    const st = join(dir, 'model.pth');
    writeSafetensors(st, { w: tensor([2], Float32Array.from([3, 4])) });
    assert.deepEqual([...readWeights(pth).get('w')!.data], [1, 2]);
    assert.deepEqual([...readWeights(st).get('w')!.data], [3, 4]);
    writeFileSync(join(dir, 'legacy.pt'), Uint8Array.from([0x80, 0x02, 0x8a, 0x0a]));
    assert.throws(() => readWeights(join(dir, 'legacy.pt')), { code: 'FILE_INVALID', message: /legacy \(pre-zip\)/ });
  } finally {
    rmSync(dir, { recursive: true });
  }
});
