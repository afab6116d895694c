// Opens a weight file of either checkpoint format, chosen by content: a zip (or a legacy
// pickle, which the .pth reader refuses clearly) is a torch.save checkpoint, anything else must
// be .safetensors — so callers need not trust the extension, and a `.pth` that is neither is
// named as a bad checkpoint, not as a bad safetensors file. Tensors are then read one at a time.

import { DistVaeError } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { asParam, checkBinding, type BindOptions, type ExpectedParam } from '../weights/bind.js';
import type { StoredTensor } from '../weights/dtype.js';
import { openPth } from '../weights/pth.js';
import { readTensors, type TensorEntry, type TensorReader } from '../weights/reader.js';
import { openSafetensors, type SafetensorsReader } from '../weights/safetensors.js';
import type { FileBytes } from '../bytes/file-bytes.js';
import { readExternalBytes } from '../bytes/external-bytes.js';
import type { ByteSource } from '../bytes/byte-source.js';
import { withFileSource } from '../bytes/file-source.js';

const TORCH_EXTENSIONS = /\.(pth|pt|ckpt|bin)$/i;

/** Opens a weights source for reading tensor by tensor. */
export async function openWeights(source: ByteSource): Promise<TensorReader> {
  if (source.size === 0) throw new DistVaeError('FILE_INVALID', `${source.name}: file is empty (0 bytes), not a weights file`);
  const head = await source.read(0, Math.min(9, source.size));
  const isTorch = (head[0] === 0x50 && head[1] === 0x4b) || head[0] === 0x80;
  // A safetensors header is JSON: '{' after the 8-byte length. Neither format: a torch name
  // gets the checkpoint reader's refusal, any other the safetensors reader's.
  const isSafetensors = head[8] === 0x7b;
  return isTorch || (!isSafetensors && TORCH_EXTENSIONS.test(source.name)) ? openPth(source) : openSafetensors(source);
}

/** A float32 tensor of a file on disk: its bytes are read each time `data` is read; `file` names them. */
export class FileTensor implements StoredTensor {
  readonly dtype = 'F32' as const;
  constructor(
    readonly dims: number[],
    readonly file: FileBytes,
  ) {}

  get data(): Float32Array {
    return new Float32Array(readExternalBytes(this.file).buffer);
  }
}

/**
 * A safetensors file on disk with every tensor lazy: float32 ones name their bytes (`file`, for
 * onnxruntime's external data) and read them when `data` is asked for; others are converted.
 */
export async function openSafetensorsFile(
  path: string,
): Promise<{ metadata: Record<string, string>; tensors: Map<string, StoredTensor & { file?: FileBytes }> }> {
  return withFileSource(path, async (source) => {
    const reader = await openSafetensors(source);
    const tensors = new Map<string, StoredTensor & { file?: FileBytes }>();
    for (const [name, e] of reader.entries) {
      const file = reader.fileBytes(name)!;
      tensors.set(name, e.dtype === 'F32' ? new FileTensor([...e.dims], file) : await reader.readTensor(name));
    }
    return { metadata: reader.metadata, tensors };
  });
}

/** Reads every tensor of a weights file. */
export function readWeights(path: string): Promise<Map<string, StoredTensor>> {
  return withFileSource(path, async (source) => readTensors(await openWeights(source)));
}

/** Options of readBoundWeights: binding's, and where converted tensors go. */
export interface ReadBoundOptions extends BindOptions {
  /**
   * Where a tensor converted to float32 in JS (float16, bfloat16, a .pth storage) is written, one
   * at a time, so that only its bytes in a file remain (a SpillFile's append): onnxruntime then
   * reads it as external data, as it reads a float32 checkpoint's.
   */
  spill?: (data: Float32Array, name: string) => FileBytes;
}

/**
 * The decoder's tensors from an opened file: the shapes are bound first (header only, every
 * problem named at once), then only the expected tensors are read, one after another — a
 * view or storage the decoder does not expect is never materialised; with `spill`, converted
 * tensors end in a file too. `entries` may rename the
 * reader's keys (each entry keeps its stored name) and reshape them (same element count).
 */
export async function readBoundWeights(
  reader: TensorReader,
  entries: ReadonlyMap<string, TensorEntry>,
  expected: readonly ExpectedParam[],
  options: ReadBoundOptions = {},
): Promise<Map<string, Tensor>> {
  checkBinding(expected, entries, { source: reader.source, ...options });
  const out = new Map<string, Tensor>();
  const external = (reader as Partial<SafetensorsReader>).fileBytes;
  for (const param of expected) {
    const entry = entries.get(param.name)!;
    const file = entry.dtype === 'F32' && param.dims.length > 0 ? external?.(entry.name) : undefined;
    if (file) {
      // A float32 tensor in a local file stays there: onnxruntime reads it as external data, and
      // JS reads it only when its data is asked for.
      out.set(param.name, new FileTensor([...entry.dims], file));
      continue;
    }
    const stored = await reader.readTensor(entry.name);
    // A renamed entry may view the stored values in another shape of the same size (a 1×1 conv as a linear weight).
    const t = asParam({ dims: [...entry.dims], data: stored.data }, param);
    // A converted tensor goes to the spill file when there is one, and its JS copy is dropped.
    out.set(param.name, options.spill && t.dims.length > 0 ? new FileTensor([...t.dims], options.spill(t.data, param.name)) : t);
  }
  return out;
}
