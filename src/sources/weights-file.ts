// Reads a weight file of either checkpoint format, chosen by content (a zip, or a legacy
// pickle that parsePth then refuses clearly, is a torch.save .pth; anything else must be
// .safetensors), so callers need not trust the extension. A safetensors file is opened lazily
// (each tensor read when its data is asked for, float32 ones passable to onnxruntime as
// external data); a .pth is read whole.

import { closeSync, openSync, readSync } from 'node:fs';
import { readFileBytes } from '../io/files.js';
import type { StoredTensor } from '../weights/dtype.js';
import { parsePth } from '../weights/pth.js';
import { openSafetensors } from '../weights/safetensors.js';

function firstBytes(path: string): Uint8Array {
  const head = new Uint8Array(2);
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return readFileBytes(path); // reports the failure by path
  }
  try {
    readSync(fd, head, 0, 2, 0);
  } finally {
    closeSync(fd);
  }
  return head;
}

export function readWeights(path: string): Map<string, StoredTensor> {
  const head = firstBytes(path);
  const isTorch = (head[0] === 0x50 && head[1] === 0x4b) || head[0] === 0x80;
  return isTorch ? parsePth(readFileBytes(path), path).tensors : openSafetensors(path).tensors;
}
