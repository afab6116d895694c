// PyTorch .pth/.pt state dicts in torch.save's zip format (torch >= 1.6): `<top>/data.pkl` is a
// pickle whose tensors reference storages stored raw as `<top>/data/<key>`. The pickle goes
// through the restricted unpickler with an allowlist of exactly what a state dict needs
// (OrderedDict, tensor/parameter rebuild functions, storage types), as torch.load's
// weights_only mode does. Tensors become contiguous float32 copies honouring storage offset and
// strides. A checkpoint that wraps its state dict one level down is accepted (see
// `findStateDict`). Opening reads the zip directory and the pickle only; each storage's
// declared size is checked against its pickle entry before any of it is read, and a tensor is
// read later, alone, from just the byte range of its storage that it spans.

import { DistVaeError } from '../errors.js';
import { bytesSource, type ByteSource } from '../bytes/byte-source.js';
import { withFileSource } from '../bytes/file-source.js';
import { elementCount, stridesOf } from '../tensor.js';
import { decodeToFloat32, DTYPE_BYTES, type DType, type StoredTensor } from './dtype.js';
import { unpickle } from './pickle.js';
import type { TensorEntry, TensorReader } from './reader.js';
import { openZip, type ZipArchive, type ZipEntry } from './zip.js';

/** The tensors of a torch.save checkpoint, and the key its state dict was found under. */
export interface PthContents {
  readonly tensors: Map<string, StoredTensor>;
  /** The top-level key the state dict was found under, or null when the top level is it. */
  readonly stateDictKey: string | null;
}

/** A checkpoint with its pickle read: tensors are read on demand. */
export interface PthReader extends TensorReader {
  /** The top-level key the state dict was found under, or null when the top level is it. */
  readonly stateDictKey: string | null;
}

/** A state dict's pickle is kilobytes to a few megabytes; larger is refused before reading. */
const MAX_PICKLE_BYTES = 64 * 1024 * 1024;

/** A torch storage type named in the pickle, e.g. `torch.HalfStorage`. */
class StorageType {
  constructor(
    readonly name: string,
    readonly dtype: DType,
  ) {}
}

class Storage {
  constructor(
    readonly key: string,
    readonly dtype: DType,
    readonly numel: number,
    readonly entry: ZipEntry,
  ) {}
}

/** A tensor as the pickle describes it; materialized only once the state dict is chosen. */
class TensorRef {
  constructor(
    readonly storage: Storage,
    readonly offset: number,
    readonly size: readonly number[],
    readonly stride: readonly number[],
  ) {}
}

const STORAGE_DTYPES: Readonly<Record<string, DType>> = {
  FloatStorage: 'F32',
  HalfStorage: 'F16',
  BFloat16Storage: 'BF16',
  DoubleStorage: 'F64',
  LongStorage: 'I64',
  IntStorage: 'I32',
  ShortStorage: 'I16',
  CharStorage: 'I8',
  ByteStorage: 'U8',
  BoolStorage: 'BOOL',
};

/** Keys tried first, in order, when the top level wraps the state dict. */
const WRAPPER_KEYS = ['state_dict', 'model_state_dict', 'model', 'module'];

/** Reads every tensor of a checkpoint (expanded views larger than their storage are refused). */
export function readPth(path: string): Promise<PthContents> {
  return withFileSource(path, (source) => readWholePth(source));
}

/** Parses the bytes of a zip-format torch.save file; `source` names it in error messages. */
export function parsePth(bytes: Uint8Array, source = '<buffer>'): Promise<PthContents> {
  return readWholePth(bytesSource(bytes, source));
}

async function readWholePth(source: ByteSource): Promise<PthContents> {
  const reader = await openPth(source);
  const tensors = new Map<string, StoredTensor>();
  for (const name of reader.entries.keys()) tensors.set(name, await reader.readTensor(name, { refuseExpanded: true }));
  return { tensors, stateDictKey: reader.stateDictKey };
}

/** Opens a zip-format torch.save source: reads its directory and pickle, not its storages. */
export async function openPth(
  source: ByteSource,
): Promise<PthReader & { readTensor(name: string, options?: { refuseExpanded?: boolean }): Promise<StoredTensor> }> {
  const name = source.name;
  const fail: (message: string) => never = (message) => {
    throw new DistVaeError('FILE_INVALID', `${name}: ${message}`);
  };
  if (source.size === 0) fail('file is empty (0 bytes), not a PyTorch checkpoint');
  const magic = await source.read(0, Math.min(2, source.size));
  if (magic[0] !== 0x50 || magic[1] !== 0x4b) {
    if (magic[0] === 0x80) fail('legacy (pre-zip) torch.save format is not supported; re-save it with torch >= 1.6');
    fail('not a zip-format PyTorch checkpoint (no zip signature)');
  }
  const zip = await openZip(source);
  const pickles = [...zip.entries.keys()].filter((n) => /^[^/]+\/data\.pkl$/.test(n));
  if (pickles.length !== 1) fail(`expected one <folder>/data.pkl entry, found ${pickles.length} (${pickles.join(', ') || 'none'})`);
  const root = pickles[0]!.slice(0, -'data.pkl'.length);
  const byteorderEntry = zip.entries.get(`${root}byteorder`);
  if (byteorderEntry) {
    const order =
      byteorderEntry.size <= 16 ? new TextDecoder().decode(await zip.read(byteorderEntry, 0, byteorderEntry.size)) : '(too long)';
    if (order !== 'little')
      throw new DistVaeError(
        'UNSUPPORTED',
        `${name}: storages are ${order === 'big' ? 'big-endian' : `in byte order ${JSON.stringify(order)}`}; only little-endian checkpoints are supported`,
      );
  }
  const pickleEntry = zip.entries.get(pickles[0]!)!;
  if (pickleEntry.size > MAX_PICKLE_BYTES)
    fail(`${pickles[0]} declares ${pickleEntry.size} bytes, above the ${MAX_PICKLE_BYTES}-byte limit for a state dict's pickle`);
  const pickleBytes = await zip.read(pickleEntry, 0, pickleEntry.size);

  const storages = new Map<string, Storage>();
  const loadStorage = (pid: unknown): Storage => {
    if (!Array.isArray(pid) || pid.length !== 5 || pid[0] !== 'storage')
      fail(`persistent id ${describe(pid)} is not a ('storage', type, key, location, numel) tuple`);
    const [, type, key, , numel] = pid as unknown[];
    if (!(type instanceof StorageType)) return fail(`persistent id names storage type ${describe(type)}, not a torch storage type`);
    if (typeof key !== 'string' || !Number.isSafeInteger(numel) || (numel as number) < 0)
      return fail(`storage id (${describe(key)}, ${describe(numel)}) is malformed`);
    const known = storages.get(key);
    if (known && known.dtype !== type.dtype) fail(`storage ${key} is referenced as both ${known.dtype} and ${type.dtype}`);
    if (known) return known;
    const entry = zip.entries.get(`${root}data/${key}`) ?? fail(`storage ${key} is referenced but ${root}data/${key} is missing`);
    // The declared size is checked here, before any byte of the storage is read or inflated.
    const expected = (numel as number) * DTYPE_BYTES[type.dtype];
    if (entry.size !== expected)
      fail(`storage ${key} has ${entry.size} bytes, ${type.name} of ${numel} elements needs ${expected} (truncated file?)`);
    const storage = new Storage(key, type.dtype, numel as number, entry);
    storages.set(key, storage);
    return storage;
  };
  const rebuildTensor = (args: readonly unknown[]): TensorRef => {
    const [storage, offset, size, stride] = args;
    if (!(storage instanceof Storage)) return fail(`tensor rebuild from ${describe(storage)}, not a storage`);
    if (!Number.isSafeInteger(offset) || (offset as number) < 0)
      fail(`tensor storage offset ${describe(offset)} is not a non-negative integer`);
    if (!isIntegerList(size) || !isIntegerList(stride) || size.length !== stride.length) {
      fail(`tensor size ${describe(size)} / stride ${describe(stride)} are not integer tuples of equal length`);
    }
    return new TensorRef(storage, offset as number, size as number[], stride as number[]);
  };
  const rebuildParameter = (args: readonly unknown[]): TensorRef => {
    if (!(args[0] instanceof TensorRef)) return fail(`parameter wraps ${describe(args[0])}, not a tensor`);
    return args[0];
  };
  const globals = new Map<string, unknown>([
    [
      'collections.OrderedDict',
      (args: readonly unknown[]) => {
        if (args.length > 0) fail('OrderedDict(...) with arguments is not supported');
        return new Map();
      },
    ],
    ['torch._utils._rebuild_tensor', rebuildTensor],
    ['torch._utils._rebuild_tensor_v2', rebuildTensor],
    ['torch._utils._rebuild_parameter', rebuildParameter],
    ['torch._utils._rebuild_parameter_with_state', rebuildParameter],
    ...Object.entries(STORAGE_DTYPES).map(([name, dtype]) => [`torch.${name}`, new StorageType(`torch.${name}`, dtype)] as const),
  ]);

  const top = unpickle(pickleBytes, {
    globals,
    persistentLoad: loadStorage,
    // torch pickles an OrderedDict's `_metadata` (module versions) as BUILD state; it is not needed.
    build: (target, state) => (target instanceof Map && state instanceof Map ? target : undefined),
    source: `${name}:${pickles[0]}`,
  });
  const { dict, key } = findStateDict(top, name);
  const entries = new Map<string, TensorEntry>(
    [...dict].map(([n, ref]) => [n, { name: n, dtype: ref.storage.dtype, dims: [...ref.size] }]),
  );
  return {
    source: name,
    entries,
    stateDictKey: key,
    readTensor: async (tensorName: string, options: { refuseExpanded?: boolean } = {}) => {
      const ref = dict.get(tensorName);
      if (!ref) throw new DistVaeError('INVALID_ARGUMENT', `${name}: no tensor named ${JSON.stringify(tensorName)}`);
      return {
        dims: [...ref.size],
        dtype: ref.storage.dtype,
        data: await readRef(zip, ref, `${name}: tensor ${JSON.stringify(tensorName)}`, options.refuseExpanded ?? false),
      };
    },
  };
}

/**
 * Reads the elements of the storage a tensor spans — checked against the storage's size
 * first — and copies its strided view into a new contiguous array.
 */
async function readRef(zip: ZipArchive, ref: TensorRef, what: string, refuseExpanded: boolean): Promise<Float32Array> {
  const { offset, size, stride, storage } = ref;
  const count = elementCount(size);
  if (count === 0) return new Float32Array(0);
  const last = offset + size.reduce((sum, n, d) => sum + (n - 1) * stride[d]!, 0);
  if (last >= storage.numel) {
    throw new DistVaeError(
      'FILE_INVALID',
      `${what}: offset ${offset}, size [${size.join(', ')}], stride [${stride.join(', ')}] reach element ${last} of a ${storage.numel}-element storage`,
    );
  }
  const spanned = last - offset + 1;
  if (refuseExpanded && count > spanned) {
    throw new DistVaeError(
      'FILE_INVALID',
      `${what}: a view of ${count} elements over ${spanned} stored ones (an expanded view); a state dict stores each parameter's values`,
    );
  }
  const bytes = DTYPE_BYTES[storage.dtype];
  const values = decodeToFloat32(await zip.read(storage.entry, offset * bytes, spanned * bytes), storage.dtype);
  return gatherStrided(values, { size, stride });
}

/**
 * The state dict is the top-level dict when all its values are tensors. Otherwise the top level
 * must be a dict holding state dicts: the one under the first of WRAPPER_KEYS present is used,
 * else the only one there is (e.g. Lightning's {"state_dict": ..., "epoch": ...}).
 */
function findStateDict(top: unknown, source: string): { dict: Map<string, TensorRef>; key: string | null } {
  if (!(top instanceof Map))
    throw new DistVaeError('FILE_INVALID', `${source}: top-level object is ${describe(top)}, expected a dict of tensors`);
  if (isStateDict(top)) return { dict: top, key: null };
  const candidates = [...top].filter(
    (entry): entry is [string, Map<string, TensorRef>] => typeof entry[0] === 'string' && isStateDict(entry[1]),
  );
  const chosen =
    WRAPPER_KEYS.map((k) => candidates.find(([key]) => key === k)).find((c) => c) ?? (candidates.length === 1 ? candidates[0] : undefined);
  if (chosen) return { dict: chosen[1], key: chosen[0] };
  const keys = [...top.keys()].map((k) => describe(k)).join(', ');
  throw new DistVaeError(
    'FILE_INVALID',
    `${source}: no state dict found: the top-level dict (keys ${keys}) is not all tensors and holds ${candidates.length} dicts of tensors` +
      (candidates.length > 1 ? ` (${candidates.map(([k]) => k).join(', ')}; none named ${WRAPPER_KEYS.join('/')})` : ''),
  );
}

function isStateDict(value: unknown): value is Map<string, TensorRef> {
  if (!(value instanceof Map) || value.size === 0) return false;
  for (const [k, v] of value) if (typeof k !== 'string' || !(v instanceof TensorRef)) return false;
  return true;
}

/** Copies a strided view starting at element 0 of `values` into a new contiguous array. */
function gatherStrided(values: Float32Array, view: { size: readonly number[]; stride: readonly number[] }): Float32Array {
  const { size, stride } = view;
  const count = elementCount(size);
  const contiguous = stridesOf(size).every((s, d) => size[d] === 1 || s === stride[d]);
  if (contiguous) return values.length === count ? values : values.slice(0, count);
  const out = new Float32Array(count);
  const rank = size.length;
  const index = new Array<number>(rank).fill(0);
  let from = 0;
  for (let i = 0; i < count; i++) {
    out[i] = values[from]!;
    for (let d = rank - 1; d >= 0; d--) {
      from += stride[d]!;
      if (++index[d]! < size[d]!) break;
      from -= stride[d]! * size[d]!;
      index[d] = 0;
    }
  }
  return out;
}

function isIntegerList(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((n) => Number.isSafeInteger(n) && n >= 0);
}

function describe(value: unknown): string {
  if (value instanceof Map) return `a dict of ${value.size} entries`;
  if (value instanceof TensorRef) return 'a tensor';
  if (value instanceof StorageType) return value.name;
  if (Array.isArray(value)) return `a tuple/list of ${value.length}`;
  if (typeof value === 'bigint') return `${value}`;
  return JSON.stringify(value) ?? String(value);
}
