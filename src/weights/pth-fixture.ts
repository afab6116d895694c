// Test support only: writes small torch.save-style checkpoints (protocol-2 pickle in a zip of
// stored entries, the layout torch >= 1.6 writes) so the .pth reader can be tested on
// offsets, strides, dtypes and wrappers without torch. Also the pickle opcode emitter the
// unpickler tests use to spell out hostile pickles.

import { zipSync } from 'fflate';
import { stridesOf } from '../tensor.js';
import { encodeFromFloat32, type FloatDType } from './dtype.js';

/** Emits pickle opcodes; methods are named after the opcodes they write. */
export class PickleWriter {
  private readonly out: number[] = [];

  raw(...bytes: number[]): this {
    this.out.push(...bytes);
    return this;
  }
  text(s: string): this {
    return this.raw(...new TextEncoder().encode(s));
  }
  proto(version = 2): this {
    return this.raw(0x80, version);
  }
  mark(): this {
    return this.raw(0x28);
  }
  global(module: string, name: string): this {
    return this.raw(0x63).text(`${module}\n${name}\n`);
  }
  binunicode(s: string): this {
    const bytes = new TextEncoder().encode(s);
    return this.raw(0x58, ...le32(bytes.length), ...bytes);
  }
  int(n: number): this {
    if (n >= 0 && n < 256) return this.raw(0x4b, n);
    if (n >= 0 && n < 65536) return this.raw(0x4d, n & 0xff, n >> 8);
    return this.raw(0x4a, ...le32(n));
  }
  tuple(): this {
    return this.raw(0x74);
  }
  emptyTuple(): this {
    return this.raw(0x29);
  }
  emptyDict(): this {
    return this.raw(0x7d);
  }
  setitems(): this {
    return this.raw(0x75);
  }
  reduce(): this {
    return this.raw(0x52);
  }
  binpersid(): this {
    return this.raw(0x51);
  }
  bool(value: boolean): this {
    return this.raw(value ? 0x88 : 0x89);
  }
  intTuple(values: readonly number[]): this {
    this.mark();
    for (const v of values) this.int(v);
    return this.tuple();
  }
  stop(): this {
    return this.raw(0x2e);
  }
  bytes(): Uint8Array {
    return Uint8Array.from(this.out);
  }
}

function le32(n: number): number[] {
  return [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff];
}

export interface FixtureStorage {
  dtype: FloatDType;
  values: Float32Array;
}

export interface FixtureTensor {
  storage: string;
  size: number[];
  /** Default: contiguous. */
  stride?: number[];
  offset?: number;
}

export interface FixtureOptions {
  storages: Record<string, FixtureStorage>;
  tensors: Record<string, FixtureTensor>;
  /** The zip's top folder (torch uses the file's stem). */
  folder?: string;
  /** Wrap tensors as nn.Parameters (torch._utils._rebuild_parameter). */
  parameters?: boolean;
  /** Put the state dict under each of these keys of a dict that also holds `epoch`. */
  wrapKeys?: string[];
}

const STORAGE_TYPES: Record<FloatDType, string> = { F32: 'FloatStorage', F16: 'HalfStorage', BF16: 'BFloat16Storage' };

export function buildPth(options: FixtureOptions): Uint8Array {
  const folder = options.folder ?? 'archive';
  const p = new PickleWriter().proto(2);
  const wrapKeys = options.wrapKeys ?? [];
  if (wrapKeys.length) p.emptyDict().mark();
  for (const key of wrapKeys.length ? wrapKeys : [undefined]) {
    if (key !== undefined) p.binunicode(key);
    writeStateDict(p, options);
  }
  if (wrapKeys.length) p.binunicode('epoch').int(3).setitems();
  p.stop();

  const files: Record<string, [Uint8Array, { level: 0 }]> = {
    [`${folder}/data.pkl`]: [p.bytes(), { level: 0 }],
    [`${folder}/byteorder`]: [new TextEncoder().encode('little'), { level: 0 }],
  };
  for (const [key, storage] of Object.entries(options.storages)) {
    files[`${folder}/data/${key}`] = [encodeFromFloat32(storage.values, storage.dtype), { level: 0 }];
  }
  return zipSync(files);
}

function writeStateDict(p: PickleWriter, options: FixtureOptions): void {
  p.global('collections', 'OrderedDict').emptyTuple().reduce().mark();
  for (const [name, t] of Object.entries(options.tensors)) {
    const storage = options.storages[t.storage]!;
    p.binunicode(name);
    if (options.parameters) p.global('torch._utils', '_rebuild_parameter').mark();
    p.global('torch._utils', '_rebuild_tensor_v2').mark();
    p.mark()
      .binunicode('storage')
      .global('torch', STORAGE_TYPES[storage.dtype])
      .binunicode(t.storage)
      .binunicode('cpu')
      .int(storage.values.length)
      .tuple();
    p.binpersid()
      .int(t.offset ?? 0)
      .intTuple(t.size)
      .intTuple(t.stride ?? stridesOf(t.size));
    p.bool(false).global('collections', 'OrderedDict').emptyTuple().reduce().tuple().reduce();
    if (options.parameters) p.bool(true).global('collections', 'OrderedDict').emptyTuple().reduce().tuple().reduce();
  }
  p.setitems();
}
