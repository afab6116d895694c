// Reads a weight file of either checkpoint format, chosen by content (a zip, or a legacy
// pickle that parsePth then refuses clearly, is a torch.save .pth; anything else must be
// .safetensors), so callers need not trust the extension.

import { readFileBytes } from '../io/files.js';
import type { StoredTensor } from '../weights/dtype.js';
import { parsePth } from '../weights/pth.js';
import { parseSafetensors } from '../weights/safetensors.js';

export function readWeights(path: string): Map<string, StoredTensor> {
  const bytes = readFileBytes(path);
  const isTorch = (bytes[0] === 0x50 && bytes[1] === 0x4b) || bytes[0] === 0x80;
  return (isTorch ? parsePth(bytes, path) : parseSafetensors(bytes, path)).tensors;
}
