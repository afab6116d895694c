// The portable bundle (`npm run bundle`, scripts/bundle.ts; issue 26): built once for this file,
// unpacked into an empty folder and run with a PATH that has no `node` (an empty folder), it
// runs `distvae demo`, decodes the trained TAEF2 (when ../shared holds it) and starts a
// `distvae worker`, which SIGTERM stops. It holds no onnxruntime-web, no other platform's
// onnxruntime binaries and no dev tools, and stays within 45 MiB.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { writeNpy } from './io/npy.js';
import { redisServerPath, startRedisServer } from './ranks/testing/redis-server.js';
import { seededTensor } from './tensor.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SHARED = process.env['DISTVAE_SHARED_DIR'] ?? join(ROOT, '..', 'shared');
const TAEF2 = join(SHARED, 'models', 'taef2', 'taef2_decoder.pth');
const MAX_BYTES = 45 * 2 ** 20;
const supported = process.platform === 'linux' && process.arch === 'x64';

const dir = mkdtempSync(join(tmpdir(), 'distvae-bundle-test-'));
const tarball = join(dir, 'distvae-linux-x64.tar.xz');
const unpacked = join(dir, 'unpacked');
const launcher = join(unpacked, 'distvae', 'bin', 'distvae');
/** No `node` anywhere on it: the launcher must bring its own. */
const noNodeEnv = { PATH: join(dir, 'empty-path'), HOME: dir };

before(() => {
  if (!supported) return;
  const built = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'bundle.ts'), '--out', tarball], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  assert.equal(built.status, 0, built.stderr + built.stdout);
  mkdirSync(unpacked);
  mkdirSync(noNodeEnv.PATH);
  const tar = spawnSync('tar', ['-xJf', tarball, '-C', unpacked], { encoding: 'utf8' });
  assert.equal(tar.status, 0, tar.stderr);
});
after(() => rmSync(dir, { recursive: true, force: true }));

const skip = supported ? false : `the bundle is linux-x64; this is ${process.platform}-${process.arch}`;

function run(args: string[], cwd = dir): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(launcher, args, { cwd, env: noNodeEnv, encoding: 'utf8', timeout: 10 * 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('the bundle is at most 45 MiB and holds node, the built package and only linux-x64 runtime dependencies', { skip }, () => {
  const size = statSync(tarball).size;
  assert.ok(size <= MAX_BYTES, `${size} bytes`);
  const top = join(unpacked, 'distvae');
  assert.ok(existsSync(join(top, 'node', 'bin', 'node')));
  assert.ok(existsSync(join(top, 'lib', 'distvae', 'dist', 'cli', 'main.js')));
  const modules = join(top, 'lib', 'distvae', 'node_modules');
  const names = readdirSync(modules).flatMap((n) => (n.startsWith('@') ? readdirSync(join(modules, n)).map((m) => `${n}/${m}`) : [n]));
  for (const absent of ['onnxruntime-web', 'typescript', 'tsx', 'esbuild', 'eslint', 'prettier', 'adm-zip', 'global-agent'])
    assert.ok(!names.includes(absent), `${absent} is bundled`);
  assert.deepEqual(readdirSync(join(modules, 'onnxruntime-node', 'bin', 'napi-v6')), ['linux']);
  assert.deepEqual(readdirSync(join(modules, 'onnxruntime-node', 'bin', 'napi-v6', 'linux')), ['x64']);
  const build = JSON.parse(readFileSync(join(top, 'BUILD.json'), 'utf8')) as { node: string };
  assert.equal(build.node, process.version);
});

test('with no node on PATH the bundle runs `distvae demo`', { skip }, () => {
  const r = run(['demo']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /decoded \[1, 3, \d+, \d+\]/);
});

test('with no node on PATH the bundle decodes the trained TAEF2', { skip: skip || (!existsSync(TAEF2) && `${TAEF2} is absent`) }, () => {
  const z = join(dir, 'z-taef2.npy');
  writeNpy(z, seededTensor([1, 32, 16, 16], 1));
  const out = join(dir, 'taef2.png');
  const r = run(['decode', '--vae', TAEF2, '--family', 'tae', '--latents', z, '--out', out, '--threads', '1', '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual((JSON.parse(r.stdout) as { shape: number[] }).shape, [1, 3, 128, 128]);
  assert.ok(existsSync(out));
});

test(
  'with no node on PATH `distvae worker` starts, serves, and stops on SIGTERM',
  { skip: skip || (!redisServerPath() && 'redis-server is not installed') },
  async () => {
    const redis = await startRedisServer();
    try {
      const worker = spawn(launcher, ['worker', '--redis', redis.url, '--synthetic', '--family', 'tae', '--threads', '1'], {
        cwd: dir,
        env: noNodeEnv,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      worker.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
      worker.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
      const exited = new Promise<number | null>((resolve) => worker.on('close', (code) => resolve(code)));
      for (let i = 0; i < 1200 && !/serving queue/.test(stdout) && worker.exitCode === null; i++)
        await new Promise((r) => setTimeout(r, 100));
      assert.match(stdout, /serving queue/, stderr);
      worker.kill('SIGTERM');
      assert.equal(await exited, 0, stderr);
      assert.match(stdout, /stopped after 0 tile\(s\)/);
    } finally {
      await redis.stop();
    }
  },
);
