// Output appears whole or not at all: a full disk (a real 64 KiB tmpfs where this process may
// mount one, and an injected ENOSPC everywhere), a failing producer and a failing ffmpeg all
// leave neither a partial file at the target nor a temporary one beside it, and an existing
// file at the target is kept.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { tensor } from '../tensor.js';
import { AtomicFile, withAtomicFile, writeFileAtomic, type AtomicFileSystem } from './atomic-file.js';
import { writeNpy } from '../io/npy.js';
import { writeSampleVideo } from '../io/video.js';

const root = mkdtempSync(join(tmpdir(), 'distvae-atomic-'));
after(() => rmSync(root, { recursive: true, force: true }));

function folder(name: string): string {
  const dir = join(root, name);
  mkdirSync(dir);
  return dir;
}

/** Node's fs, but every write after `okWrites` fails with ENOSPC. */
async function fullAfter(okWrites: number): Promise<AtomicFileSystem> {
  const fs = await import('node:fs');
  let writes = 0;
  return {
    openSync: (p, f) => fs.openSync(p, f),
    writeSync: (fd, b, o, l) => {
      if (writes++ >= okWrites) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      return fs.writeSync(fd, b, o, l);
    },
    fsyncSync: fs.fsyncSync,
    closeSync: fs.closeSync,
    renameSync: fs.renameSync,
    unlinkSync: fs.unlinkSync,
  };
}

test('a write that fails part way leaves no file and keeps what was at the target', async () => {
  const dir = folder('injected');
  const target = join(dir, 'out.npy');
  await assert.rejects(
    async () => {
      const file = new AtomicFile(target, await fullAfter(1));
      file.write(new Uint8Array(100));
      file.write(new Uint8Array(100));
    },
    { code: 'INVALID_ARGUMENT', message: /cannot write .*out\.npy \(no space left on the device\); nothing was left at that path/ },
  );
  assert.deepEqual(readdirSync(dir), []);
  writeFileSync(target, 'old');
  const full = await fullAfter(0);
  assert.throws(() => writeFileAtomic(target, new Uint8Array(10), full), { message: /no space left/ });
  assert.equal(readFileSync(target, 'utf8'), 'old');
  assert.deepEqual(readdirSync(dir), ['out.npy']);
  writeFileAtomic(target, new TextEncoder().encode('new'));
  assert.equal(readFileSync(target, 'utf8'), 'new');
  assert.deepEqual(readdirSync(dir), ['out.npy']);
});

test('a producer that throws leaves nothing', async () => {
  const dir = folder('producer');
  await assert.rejects(
    withAtomicFile(join(dir, 'x.png'), async (file) => {
      file.write(new Uint8Array(1000));
      throw new Error('decode failed half way');
    }),
    /decode failed half way/,
  );
  assert.deepEqual(readdirSync(dir), []);
});

test('a real full disk (a 64 KiB tmpfs) leaves no partial .npy', (t) => {
  const dir = folder('tmpfs');
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'ignore' }).status === 0;
  if (!mounted) {
    t.skip('cannot mount a tmpfs here (not root); the injected ENOSPC test covers the path');
    return;
  }
  try {
    assert.throws(() => writeNpy(join(dir, 'z.npy'), tensor([1, 4, 128, 128])), { message: /z\.npy \(no space left on the device\)/ });
    assert.deepEqual(readdirSync(dir), []);
  } finally {
    spawnSync('umount', [dir]);
  }
});

test('an ffmpeg that fails after writing part of its output leaves nothing at the target', async () => {
  const dir = folder('video');
  const fake = join(root, 'fake-ffmpeg.sh');
  // Writes something to its last argument (the output), then fails as a full disk would.
  writeFileSync(
    fake,
    '#!/bin/sh\nfor last; do :; done\ncat > /dev/null\necho partial > "$last"\necho "No space left on device" >&2\nexit 1\n',
  );
  chmodSync(fake, 0o755);
  await assert.rejects(writeSampleVideo(join(dir, 'v.mp4'), tensor([1, 3, 2, 4, 4]), 'signed', { ffmpeg: fake }), {
    code: 'RUNTIME_FAILED',
    message: /ffmpeg exited with code 1: No space left on device/,
  });
  assert.deepEqual(readdirSync(dir), []);
});
