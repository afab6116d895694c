// Reads a weight file of either checkpoint format, chosen by content (a zip, or a legacy
// pickle that parsePth then refuses clearly, is a torch.save .pth; anything else must be
// .safetensors), so callers need not trust the extension.

import { readFileBytes } from '../io/files.js';
import type { StoredTensor } from './dtype.js';
import { parsePth } from './pth.js';
import { parseSafetensors } from './safetensors.js';

export function readWeights(path: string): Map<string, StoredTensor> {
  return parseWeights(readFileBytes(path), path);
}

/** The tensors of a checkpoint held in memory (.pth or .safetensors, told apart by content); `source` names it in errors. */
export function parseWeights(bytes: Uint8Array, source = '<buffer>'): Map<string, StoredTensor> {
  const isTorch = (bytes[0] === 0x50 && bytes[1] === 0x4b) || bytes[0] === 0x80;
  return (isTorch ? parsePth(bytes, source) : parseSafetensors(bytes, source)).tensors;
}
