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

function serve(honourRange: boolean): Promise<Server> {
  const server = createServer((req, res) => {
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (req.method === 'HEAD') {
      res.writeHead(200, { 'content-length': bytes.length });
      res.end();
    } else if (range && honourRange) {
      const [from, to] = [Number(range[1]), Number(range[2])];
      res.writeHead(206, { 'content-range': `bytes ${from}-${to}/${bytes.length}` });
      res.end(bytes.subarray(from, to + 1));
    } else {
      res.writeHead(200);
      res.end(bytes);
    }
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

test('an HTTP server with Range support serves ranges; one without is refused', async () => {
  for (const honour of [true, false]) {
    const server = await serve(honour);
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/w.safetensors`;
      const source = await httpRangeSource(url);
      if (honour) await checkSource(source);
      else await assert.rejects(source.read(0, 4), { code: 'FILE_INVALID', message: /answered HTTP 200, expected 206/ });
    } finally {
      server.close();
    }
  }
});
