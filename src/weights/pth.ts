// PyTorch .pth/.pt state dicts in torch.save's zip format (torch >= 1.6): `<top>/data.pkl` is a
// pickle whose tensors reference storages stored raw as `<top>/data/<key>`. The pickle goes
// through the restricted unpickler with an allowlist of exactly what a state dict needs
// (OrderedDict, tensor/parameter rebuild functions, storage types), as torch.load's
// weights_only mode does. Tensors become contiguous float32 copies honouring storage offset and
// strides. A checkpoint that wraps its state dict one level down is accepted (see
// `findStateDict`).

import { unzipSync } from 'fflate';
import { DistVaeError } from '../errors.js';
import { readFileBytes } from '../io/files.js';
import { elementCount, stridesOf } from '../tensor.js';
import { decodeToFloat32, DTYPE_BYTES, type DType, type StoredTensor } from './dtype.js';
import { unpickle } from './pickle.js';

export interface PthContents {
  readonly tensors: Map<string, StoredTensor>;
  /** The top-level key the state dict was found under, or null when the top level is it. */
  readonly stateDictKey: string | null;
}

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
    readonly bytes: Uint8Array,
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

export function readPth(path: string): PthContents {
  return parsePth(readFileBytes(path), path);
}

/** Parses the bytes of a zip-format torch.save file; `source` names it in error messages. */
export function parsePth(bytes: Uint8Array, source = '<buffer>'): PthContents {
  const fail: (message: string) => never = (message) => {
    throw new DistVaeError('FILE_INVALID', `${source}: ${message}`);
  };
  if (bytes[0] !== 0x50 || bytes[1] !== 0x4b) {
    if (bytes[0] === 0x80) fail('legacy (pre-zip) torch.save format is not supported; re-save it with torch >= 1.6');
    fail('not a zip-format PyTorch checkpoint (no zip signature)');
  }
  const entries = unzipEntries(bytes, source);
  const pickles = Object.keys(entries).filter((name) => /^[^/]+\/data\.pkl$/.test(name));
  if (pickles.length !== 1) fail(`expected one <folder>/data.pkl entry, found ${pickles.length} (${pickles.join(', ') || 'none'})`);
  const root = pickles[0]!.slice(0, -'data.pkl'.length);
  const byteorder = entries[`${root}byteorder`];
  if (byteorder && new TextDecoder().decode(byteorder) !== 'little') {
    throw new DistVaeError('UNSUPPORTED', `${source}: storages are big-endian; only little-endian checkpoints are supported`);
  }

  const storages = new Map<string, Storage>();
  const loadStorage = (pid: unknown): Storage => {
    if (!Array.isArray(pid) || pid.length !== 5 || pid[0] !== 'storage') fail(`persistent id ${describe(pid)} is not a ('storage', type, key, location, numel) tuple`);
    const [, type, key, , numel] = pid as unknown[];
    if (!(type instanceof StorageType)) return fail(`persistent id names storage type ${describe(type)}, not a torch storage type`);
    if (typeof key !== 'string' || !Number.isSafeInteger(numel) || (numel as number) < 0) return fail(`storage id (${describe(key)}, ${describe(numel)}) is malformed`);
    const known = storages.get(key);
    if (known && known.dtype !== type.dtype) fail(`storage ${key} is referenced as both ${known.dtype} and ${type.dtype}`);
    if (known) return known;
    const bytes = entries[`${root}data/${key}`] ?? fail(`storage ${key} is referenced but ${root}data/${key} is missing`);
    const expected = (numel as number) * DTYPE_BYTES[type.dtype];
    if (bytes.length !== expected) fail(`storage ${key} has ${bytes.length} bytes, ${type.name} of ${numel} elements needs ${expected} (truncated file?)`);
    const storage = new Storage(key, type.dtype, bytes);
    storages.set(key, storage);
    return storage;
  };

  const rebuildTensor = (args: readonly unknown[]): TensorRef => {
    const [storage, offset, size, stride] = args;
    if (!(storage instanceof Storage)) return fail(`tensor rebuild from ${describe(storage)}, not a storage`);
    if (!Number.isSafeInteger(offset) || (offset as number) < 0) fail(`tensor storage offset ${describe(offset)} is not a non-negative integer`);
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
    ['collections.OrderedDict', (args: readonly unknown[]) => {
      if (args.length > 0) fail('OrderedDict(...) with arguments is not supported');
      return new Map();
    }],
    ['torch._utils._rebuild_tensor', rebuildTensor],
    ['torch._utils._rebuild_tensor_v2', rebuildTensor],
    ['torch._utils._rebuild_parameter', rebuildParameter],
    ['torch._utils._rebuild_parameter_with_state', rebuildParameter],
    ...Object.entries(STORAGE_DTYPES).map(([name, dtype]) => [`torch.${name}`, new StorageType(`torch.${name}`, dtype)] as const),
  ]);

  const top = unpickle(entries[pickles[0]!]!, {
    globals,
    persistentLoad: loadStorage,
    // torch pickles an OrderedDict's `_metadata` (module versions) as BUILD state; it is not needed.
    build: (target, state) => (target instanceof Map && state instanceof Map ? target : undefined),
    source: `${source}:${pickles[0]}`,
  });
  const { dict, key } = findStateDict(top, source);

  const decoded = new Map<Storage, Float32Array>();
  const tensors = new Map<string, StoredTensor>();
  for (const [name, ref] of dict) {
    let values = decoded.get(ref.storage);
    if (!values) decoded.set(ref.storage, (values = decodeToFloat32(ref.storage.bytes, ref.storage.dtype)));
    tensors.set(name, { dims: [...ref.size], dtype: ref.storage.dtype, data: gatherStrided(values, ref, `${source}: tensor ${JSON.stringify(name)}`) });
  }
  return { tensors, stateDictKey: key };
}

function unzipEntries(bytes: Uint8Array, source: string): Record<string, Uint8Array> {
  try {
    // Only the pickle, the storages and the byte order are read; other records are ignored.
    return unzipSync(bytes, { filter: (f) => /^[^/]+\/(data\.pkl|byteorder|data\/[^/]+)$/.test(f.name) });
  } catch (e) {
    throw new DistVaeError('FILE_INVALID', `${source}: cannot read the zip archive (${(e as Error).message})`, { cause: e });
  }
}

/**
 * The state dict is the top-level dict when all its values are tensors. Otherwise the top level
 * must be a dict holding state dicts: the one under the first of WRAPPER_KEYS present is used,
 * else the only one there is (e.g. Lightning's {"state_dict": ..., "epoch": ...}).
 */
function findStateDict(top: unknown, source: string): { dict: Map<string, TensorRef>; key: string | null } {
  if (!(top instanceof Map)) throw new DistVaeError('FILE_INVALID', `${source}: top-level object is ${describe(top)}, expected a dict of tensors`);
  if (isStateDict(top)) return { dict: top, key: null };
  const candidates = [...top].filter((entry): entry is [string, Map<string, TensorRef>] => typeof entry[0] === 'string' && isStateDict(entry[1]));
  const chosen = WRAPPER_KEYS.map((k) => candidates.find(([key]) => key === k)).find((c) => c) ?? (candidates.length === 1 ? candidates[0] : undefined);
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

/** Copies a strided view of `values` into a new contiguous array, checking it stays in bounds. */
function gatherStrided(values: Float32Array, ref: TensorRef, what: string): Float32Array {
  const { offset, size, stride } = ref;
  const count = elementCount(size);
  const out = new Float32Array(count);
  if (count === 0) return out;
  const last = offset + size.reduce((sum, n, d) => sum + (n - 1) * stride[d]!, 0);
  if (last >= values.length) {
    throw new DistVaeError(
      'FILE_INVALID',
      `${what}: offset ${offset}, size [${size.join(', ')}], stride [${stride.join(', ')}] reach element ${last} of a ${values.length}-element storage`,
    );
  }
  const contiguous = stridesOf(size).every((s, d) => size[d] === 1 || s === stride[d]);
  if (contiguous) {
    out.set(values.subarray(offset, offset + count));
    return out;
  }
  const rank = size.length;
  const index = new Array<number>(rank).fill(0);
  let from = offset;
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
