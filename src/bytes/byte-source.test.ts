import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { blobSource, bytesSource, httpRangeSource, readAll, type ByteSource } from './byte-source.js';
import { openFileSource } from './file-source.js';

const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) & 0xff);

async function checkSource(source: ByteSource): Promise<void> {
  assert.equal(source.size, 1000);
  assert.deepEqual(await source.read(3, 5), bytes.subarray(3, 8));
  assert.deepEqual(await source.read(995, 5), bytes.subarray(995));
  assert.deepEqual(await readAll(source, 0, 1000), bytes);
  await assert.rejects(source.read(996, 5), { code: 'FILE_INVALID', message: /bytes \[996, 1001\) lie outside the 1000-byte file/ });
  await assert.rejects(source.read(-1, 2), { code: 'FILE_INVALID' });
}

test('a buffer, a Blob and a file serve the same ranges and refuse ranges past the end', async () => {
  await checkSource(bytesSource(bytes, 'mem'));
  await checkSource(bytesSource(bytes.slice().buffer, 'mem'));
  await checkSource(blobSource(new Blob([bytes]), 'blob'));
  const dir = mkdtempSync(join(tmpdir(), 'distvae-src-'));
  try {
    writeFileSync(join(dir, 'f.bin'), bytes);
    const file = await openFileSource(join(dir, 'f.bin'));
    try {
      await checkSource(file);
    } finally {
      await file.close();
    }
    await assert.rejects(openFileSource(join(dir, 'absent.bin')), { code: 'FILE_NOT_FOUND' });
    await assert.rejects(openFileSource(dir), { code: 'FILE_INVALID', message: /is a folder/ });
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('devices are refused before any byte is read: /dev/zero and /dev/urandom have no size to bound reads by', async () => {
  for (const device of ['/dev/zero', '/dev/urandom']) {
    await assert.rejects(openFileSource(device), {
      code: 'FILE_INVALID',
      message: new RegExp(`${device} is a device, not a regular file`),
    });
  }
});

/** A server for `bytes` (or `body`, what its GET answers hold); `gets` counts the GETs it answered. */
function serve(
  honourRange: boolean,
  options: { body?: Uint8Array; hold?: Promise<void> } = {},
): Promise<{ server: Server; url: string; gets: () => number }> {
  let gets = 0;
  const body = options.body ?? bytes;
  const server = createServer((req, res) => {
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (req.method === 'HEAD') {
      res.writeHead(200, { 'content-length': bytes.length });
      res.end();
      return;
    }
    gets++;
    if (range && honourRange) {
      const [from, to] = [Number(range[1]), Number(range[2])];
      res.writeHead(206, { 'content-range': `bytes ${from}-${to}/${bytes.length}` });
      res.end(bytes.subarray(from, to + 1));
    } else {
      // As a plain static server does: 200 and the whole file, here in two pieces, the second
      // held back until `hold` settles.
      res.writeHead(200, { 'content-length': body.length });
      res.write(body.subarray(0, 100));
      void (options.hold ?? Promise.resolve()).then(() => res.end(body.subarray(100)));
    }
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/w.safetensors`, gets: () => gets }),
    ),
  );
}

test('an HTTP server with Range support serves each read by a range request', async () => {
  const { server, url, gets } = await serve(true);
  try {
    await checkSource(await httpRangeSource(url));
    assert.equal(gets(), 3);
  } finally {
    server.close();
  }
});

test('a server that ignores Range (200, the whole file) is read once, from its body as it streams', async () => {
  let release!: () => void;
  const { server, url, gets } = await serve(false, { hold: new Promise<void>((r) => (release = r)) });
  try {
    const source = await httpRangeSource(url);
    // The first bytes are served while the rest of the body is still held back by the server.
    assert.deepEqual(await source.read(3, 5), bytes.subarray(3, 8));
    let late = false;
    const tail = source.read(900, 50).then((b) => ((late = true), b));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(late, false, 'a read past what has arrived waits for the body');
    release();
    assert.deepEqual(await tail, bytes.subarray(900, 950));
    await checkSource(source);
    assert.equal(gets(), 1, 'one GET for every read');
  } finally {
    server.close();
  }
});

test('a server without Range whose body disagrees with HEAD, or a file over the limit, is refused naming the sizes', async () => {
  const short = await serve(false, { body: bytes.subarray(0, 600) });
  try {
    const source = await httpRangeSource(short.url);
    await assert.rejects(source.read(0, 4), { code: 'FILE_INVALID', message: /200 answer is 600 bytes, but HEAD said 1000/ });
  } finally {
    short.server.close();
  }
  const { server, url } = await serve(false);
  try {
    const source = await httpRangeSource(url, { maxWholeBytes: 999 });
    await assert.rejects(source.read(0, 4), {
      code: 'INVALID_ARGUMENT',
      message: /is 1000 bytes and its server ignores Range requests .* at most 999 bytes whole/,
    });
  } finally {
    server.close();
  }
});
