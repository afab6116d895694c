import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { unpickle, type UnpickleOptions } from './pickle.js';
import { PickleWriter } from './pth-fixture.js';

const hex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, 'hex'));
const latin1 = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));

const orderedDict = (args: readonly unknown[]) => (args.length === 0 ? new Map() : null);
const options: UnpickleOptions = {
  globals: new Map<string, unknown>([['collections.OrderedDict', orderedDict]]),
  persistentLoad: (pid) => ({ pid }),
  source: 'test.pkl',
};

function assertUnsafe(bytes: Uint8Array, pattern: RegExp, opts: UnpickleOptions = options): void {
  assert.throws(
    () => unpickle(bytes, opts),
    (e: unknown) =>
      e instanceof DistVaeError && e.code === 'UNSAFE_PICKLE' && pattern.test(e.message) && /nothing was executed/.test(e.message),
  );
}

test('decodes CPython protocol-2 output for plain data', () => {
  // pickle.dumps({'a': 1, 'neg': -5, 'big': 300, 'huge': 70000, 'vbig': 2**40, 'nbig': -2**70,
  //   'f': 1.5, 's': 'héllo', 't': (1, 2, 3), 't1': (None,), 'l': [True, False, None],
  //   'nested': {'x': [(1, 2)]}, 'empty': ()}, protocol=2) from CPython 3.
  const bytes = hex(
    '80027d71002858010000006171014b0158030000006e656771024afbffffff580300000062696771034d2c0158040000006875676571044a701101005804000000766269677105' +
      '8a0600000000000158040000006e62696771068a090000000000000000c05801000000667107473ff80000000000005801000000737108580600000068c3a96c6c6f7109580100' +
      '000074710a4b014b024b0387710b58020000007431710c4e85710d58010000006c710e5d710f2888894e6558060000006e657374656471107d711158010000007871125d71134b' +
      '014b0286711461735805000000656d707479711529752e',
  );
  const value = unpickle(bytes, options) as Map<string, unknown>;
  assert.deepEqual(
    value,
    new Map<string, unknown>([
      ['a', 1],
      ['neg', -5],
      ['big', 300],
      ['huge', 70000],
      ['vbig', 2 ** 40],
      ['nbig', -(2n ** 70n)],
      ['f', 1.5],
      ['s', 'héllo'],
      ['t', [1, 2, 3]],
      ['t1', [null]],
      ['l', [true, false, null]],
      ['nested', new Map([['x', [[1, 2]]]])],
      ['empty', []],
    ]),
  );
  assert.ok(Object.isFrozen(value.get('t')) && !Object.isFrozen(value.get('l')), 'tuples are frozen, lists are not');
});

test('decodes CPython protocol-4 output (FRAME, STACK_GLOBAL, MEMOIZE) with allowed globals', () => {
  // pickle.dumps(collections.OrderedDict([('k', [1.25, 'v'])]), protocol=4)
  const bytes = hex(
    '80049538000000000000008c0b636f6c6c656374696f6e73948c0b4f726465726564446963749493942952948c016b945d9428473ff40000000000008c01769465732e',
  );
  assert.deepEqual(unpickle(bytes, options), new Map([['k', [1.25, 'v']]]));
});

test('refuses code-running globals before anything is called', () => {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-pickle-'));
  const canary = join(dir, 'pwned');
  try {
    const command = `touch ${canary}`;
    // GLOBAL os.system + REDUCE: what pickle.dumps of a __reduce__ exploit emits.
    assertUnsafe(
      new PickleWriter().proto(2).global('os', 'system').binunicode(command).raw(0x85).reduce().stop().bytes(),
      /global os\.system is not in the allowlist \(collections\.OrderedDict\)/,
    );
    assertUnsafe(
      new PickleWriter()
        .proto(2)
        .global('builtins', 'eval')
        .binunicode(`__import__('os').system('${command}')`)
        .raw(0x85)
        .reduce()
        .stop()
        .bytes(),
      /global builtins\.eval is not/,
    );
    // protocol 4: STACK_GLOBAL takes module and name from the stack.
    assertUnsafe(
      latin1(`\x80\x04\x8c\x05posix\x94\x8c\x06system\x94\x93\x94\x8c${String.fromCharCode(command.length)}${command}\x94\x85\x94R\x94.`),
      /global posix\.system is not in the allowlist/,
    );
    // A pickle that hides the call behind an allowed-looking prefix still stops at the GLOBAL.
    assertUnsafe(
      new PickleWriter().proto(2).global('collections', 'OrderedDict').emptyTuple().reduce().global('subprocess', 'Popen').stop().bytes(),
      /subprocess\.Popen/,
    );
    assert.equal(existsSync(canary), false);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('refuses object-building opcodes, REDUCE on non-functions, BUILD and unknown opcodes', () => {
  assertUnsafe(latin1('(X\x02\0\0\0lsios\nsystem\n.'), /opcode INST would instantiate os\.system/);
  assertUnsafe(
    new PickleWriter().proto(2).global('collections', 'OrderedDict').emptyTuple().raw(0x81).stop().bytes(),
    /opcode NEWOBJ would construct/,
  );
  assertUnsafe(new PickleWriter().proto(2).mark().global('collections', 'OrderedDict').raw(0x6f).stop().bytes(), /opcode OBJ/);
  assertUnsafe(latin1('\x80\x02\x82\x01.'), /opcode EXT1/);
  const withMarker: UnpickleOptions = { ...options, globals: new Map([['torch.FloatStorage', { marker: true }]]) };
  assertUnsafe(
    new PickleWriter().proto(2).global('torch', 'FloatStorage').emptyTuple().reduce().stop().bytes(),
    /REDUCE target is not an allowed function/,
    withMarker,
  );
  assertUnsafe(new PickleWriter().proto(2).emptyDict().emptyDict().raw(0x62).stop().bytes(), /BUILD/);
  assertUnsafe(latin1('\x80\x02\xff.'), /opcode 0xff .* not supported/);
  assertUnsafe(latin1("\x80\x02S'text'\n."), /opcode 0x53 \("S"\)/);
});

test('malformed pickles are FILE_INVALID with the byte offset', () => {
  const invalid = (bytes: Uint8Array, pattern: RegExp) =>
    assert.throws(
      () => unpickle(bytes, options),
      (e: unknown) => e instanceof DistVaeError && e.code === 'FILE_INVALID' && pattern.test(e.message),
    );
  invalid(latin1('\x80\x02X\xff\x00\x00\x00ab'), /test\.pkl: pickle byte 2: truncated: needs 255 more bytes, 2 left/);
  invalid(latin1('\x80\x02h\x07.'), /memo entry 7 was never stored/);
  invalid(latin1('\x80\x02s.'), /stack underflow/);
  invalid(latin1('\x80\x02NN.'), /STOP with 2 values/);
  invalid(latin1('\x80\x02K\x01'), /pickle byte 4: truncated/);
  invalid(latin1('\x80\x02\x8b\x00\x00\x01\x00.'), /integer of 65536 bytes is wider than the 64 bytes accepted/);
  invalid(latin1('\x80\x02N\x85Na.'), /APPEND\(S\) target is not a list/);
});
