// A restricted unpickler: it reads the pickle opcodes torch.save emits and nothing else, and it
// can never run code. GLOBAL/STACK_GLOBAL resolve only names in the caller's allowlist (to
// values the caller provides, never to anything looked up by name); REDUCE calls only the
// JavaScript functions that allowlist holds; opcodes that build arbitrary objects (INST, OBJ,
// NEWOBJ, extension registry) and every opcode not implemented here are refused with
// UNSAFE_PICKLE. Python dicts become Maps, lists become arrays, tuples frozen arrays.

import { DistVaeError } from '../errors.js';

export interface UnpickleOptions {
  /** Allowed globals by `module.name`; GLOBAL pushes the mapped value. Functions may be REDUCEd. */
  globals: ReadonlyMap<string, unknown>;
  /** Resolves a BINPERSID id (torch: storage references). */
  persistentLoad: (pid: unknown) => unknown;
  /** Applies BUILD(state) to an object; absent or returning undefined means BUILD is refused. */
  build?: (target: unknown, state: unknown) => unknown;
  /** Names the file in error messages. */
  source: string;
}

/** Opcodes that would construct or call something outside the allowlist. */
const REFUSED_OPCODES: ReadonlyMap<number, string> = new Map([
  [0x6f, 'OBJ'],
  [0x81, 'NEWOBJ'],
  [0x92, 'NEWOBJ_EX'],
  [0x82, 'EXT1'],
  [0x83, 'EXT2'],
  [0x84, 'EXT4'],
]);

const MAX_LONG_BYTES = 64;

export function unpickle(bytes: Uint8Array, options: UnpickleOptions): unknown {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let stack: unknown[] = [];
  const marks: unknown[][] = [];
  const memo = new Map<number, unknown>();
  let pos = 0;
  let opcodeAt = 0;

  const invalid: (message: string) => never = (message) => {
    throw new DistVaeError('FILE_INVALID', `${options.source}: pickle byte ${opcodeAt}: ${message}`);
  };
  const unsafe: (message: string) => never = (message) => {
    throw new DistVaeError('UNSAFE_PICKLE', `${options.source}: pickle byte ${opcodeAt}: ${message}; refused, nothing was executed`);
  };
  const need = (n: number): number => {
    if (pos + n > bytes.length) invalid(`truncated: needs ${n} more bytes, ${bytes.length - pos} left`);
    const at = pos;
    pos += n;
    return at;
  };
  const u8 = (): number => view.getUint8(need(1));
  const u16 = (): number => view.getUint16(need(2), true);
  const u32 = (): number => view.getUint32(need(4), true);
  const u64 = (): number => {
    const n = view.getBigUint64(need(8), true);
    if (n > BigInt(bytes.length)) invalid(`length ${n} exceeds the pickle size`);
    return Number(n);
  };
  const text = (n: number): string => {
    const at = need(n);
    try {
      return decoder.decode(bytes.subarray(at, at + n));
    } catch {
      return invalid('string is not valid UTF-8');
    }
  };
  const line = (): string => {
    const end = bytes.indexOf(0x0a, pos);
    if (end < 0) invalid('unterminated text argument');
    return text(end - pos + 1).slice(0, -1);
  };
  const pop = (): unknown => {
    if (stack.length === 0) invalid('stack underflow');
    return stack.pop();
  };
  const top = (): unknown => {
    if (stack.length === 0) invalid('stack underflow');
    return stack[stack.length - 1];
  };
  const popMark = (): unknown[] => {
    const items = stack;
    const outer = marks.pop();
    if (!outer) return invalid('no MARK to pop to');
    stack = outer;
    return items;
  };
  const resolveGlobal = (module: string, name: string): unknown => {
    const qualified = `${module}.${name}`;
    if (!options.globals.has(qualified)) unsafe(`global ${qualified} is not in the allowlist (${[...options.globals.keys()].join(', ')})`);
    return options.globals.get(qualified);
  };
  const dictOf = (target: unknown): Map<unknown, unknown> => {
    if (!(target instanceof Map)) return invalid('SETITEM(S) target is not a dict');
    return target;
  };
  const listOf = (target: unknown): unknown[] => {
    if (!Array.isArray(target) || Object.isFrozen(target)) return invalid('APPEND(S) target is not a list');
    return target;
  };
  const setItems = (dict: Map<unknown, unknown>, items: unknown[]): void => {
    if (items.length % 2) invalid('SETITEMS with an odd number of items');
    for (let i = 0; i < items.length; i += 2) dict.set(items[i], items[i + 1]);
  };
  const tuple = (items: unknown[]): readonly unknown[] => Object.freeze(items);

  for (;;) {
    opcodeAt = pos;
    const op = u8();
    switch (op) {
      case 0x80: {
        // PROTO
        const protocol = u8();
        if (protocol > 5) invalid(`pickle protocol ${protocol} is newer than 5`);
        break;
      }
      case 0x95: // FRAME: a length prefix only
        u64();
        break;
      case 0x2e: // STOP
        if (stack.length !== 1 || marks.length) invalid(`STOP with ${stack.length} values on the stack, expected 1`);
        return stack[0];
      case 0x28: // MARK
        marks.push(stack);
        stack = [];
        break;
      case 0x30: // POP
        if (stack.length) stack.pop();
        else popMark();
        break;
      case 0x31: // POP_MARK
        popMark();
        break;
      case 0x32: // DUP
        stack.push(top());
        break;
      case 0x4e: // NONE
        stack.push(null);
        break;
      case 0x88: // NEWTRUE
        stack.push(true);
        break;
      case 0x89: // NEWFALSE
        stack.push(false);
        break;
      case 0x4a: // BININT
        stack.push(view.getInt32(need(4), true));
        break;
      case 0x4b: // BININT1
        stack.push(u8());
        break;
      case 0x4d: // BININT2
        stack.push(u16());
        break;
      case 0x8a: // LONG1
      case 0x8b: {
        // LONG4
        const n = op === 0x8a ? u8() : u32();
        // Decoding is quadratic in the length; torch never writes integers wider than 8 bytes.
        if (n > MAX_LONG_BYTES) invalid(`integer of ${n} bytes is wider than the ${MAX_LONG_BYTES} bytes accepted`);
        const at = need(n);
        let value = 0n;
        for (let i = n - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[at + i]!);
        if (n > 0 && bytes[at + n - 1]! & 0x80) value -= 1n << BigInt(8 * n);
        stack.push(value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value);
        break;
      }
      case 0x47: // BINFLOAT (big-endian)
        stack.push(view.getFloat64(need(8), false));
        break;
      case 0x8c: // SHORT_BINUNICODE
        stack.push(text(u8()));
        break;
      case 0x58: // BINUNICODE
        stack.push(text(u32()));
        break;
      case 0x8d: // BINUNICODE8
        stack.push(text(u64()));
        break;
      case 0x7d: // EMPTY_DICT
        stack.push(new Map());
        break;
      case 0x64: {
        // DICT
        const dict = new Map();
        setItems(dict, popMark());
        stack.push(dict);
        break;
      }
      case 0x5d: // EMPTY_LIST
        stack.push([]);
        break;
      case 0x6c: {
        // LIST (popMark replaces `stack`, so it must run before `stack.push` is read)
        const items = popMark();
        stack.push(items);
        break;
      }
      case 0x29: // EMPTY_TUPLE
        stack.push(tuple([]));
        break;
      case 0x74: {
        // TUPLE
        const items = tuple(popMark());
        stack.push(items);
        break;
      }
      case 0x85: // TUPLE1
        stack.push(tuple([pop()]));
        break;
      case 0x86: {
        // TUPLE2
        const b = pop();
        stack.push(tuple([pop(), b]));
        break;
      }
      case 0x87: {
        // TUPLE3
        const c = pop();
        const b = pop();
        stack.push(tuple([pop(), b, c]));
        break;
      }
      case 0x73: {
        // SETITEM
        const value = pop();
        const key = pop();
        dictOf(top()).set(key, value);
        break;
      }
      case 0x75: {
        // SETITEMS
        const items = popMark();
        setItems(dictOf(top()), items);
        break;
      }
      case 0x61: {
        // APPEND
        const value = pop();
        listOf(top()).push(value);
        break;
      }
      case 0x65: {
        // APPENDS
        const items = popMark();
        const list = listOf(top());
        for (const item of items) list.push(item);
        break;
      }
      case 0x71: // BINPUT
        memo.set(u8(), top());
        break;
      case 0x72: // LONG_BINPUT
        memo.set(u32(), top());
        break;
      case 0x94: // MEMOIZE
        memo.set(memo.size, top());
        break;
      case 0x68: // BINGET
      case 0x6a: {
        // LONG_BINGET
        const index = op === 0x68 ? u8() : u32();
        if (!memo.has(index)) invalid(`memo entry ${index} was never stored`);
        stack.push(memo.get(index));
        break;
      }
      case 0x63: {
        // GLOBAL
        const module = line();
        stack.push(resolveGlobal(module, line()));
        break;
      }
      case 0x93: {
        // STACK_GLOBAL
        const name = pop();
        const module = pop();
        if (typeof module !== 'string' || typeof name !== 'string') invalid('STACK_GLOBAL needs two strings');
        stack.push(resolveGlobal(module, name));
        break;
      }
      case 0x52: {
        // REDUCE
        const args = pop();
        const callable = pop();
        if (typeof callable !== 'function') unsafe('REDUCE target is not an allowed function');
        if (!Array.isArray(args)) invalid('REDUCE arguments are not a tuple');
        stack.push((callable as (args: readonly unknown[]) => unknown)(args));
        break;
      }
      case 0x62: {
        // BUILD
        const state = pop();
        const built = options.build?.(top(), state);
        if (built === undefined) unsafe('BUILD (setting object state) on this object is not allowed');
        stack[stack.length - 1] = built;
        break;
      }
      case 0x51: // BINPERSID
        stack.push(options.persistentLoad(pop()));
        break;
      default: {
        const refused = REFUSED_OPCODES.get(op);
        if (op === 0x69) unsafe(`opcode INST would instantiate ${line()}.${line()}`);
        if (refused) unsafe(`opcode ${refused} would construct an arbitrary object`);
        unsafe(
          `opcode 0x${op.toString(16).padStart(2, '0')} (${JSON.stringify(String.fromCharCode(op))}) is not supported by the restricted unpickler`,
        );
      }
    }
  }
}
