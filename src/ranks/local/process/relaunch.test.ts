// The long-running commands started again under the allocator settings, through the package's
// bin as a user runs them: the child has the settings and its launcher's pid as its parent; the
// launcher passes SIGTERM on and exits as the child did (code, or death by a signal); a launcher
// SIGKILLed leaves no child behind; nothing is relaunched when the settings are set or turned off.
// Every process of a case writes one line at start (a preloaded hook), so the tests see both.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isAlive, processesWithEnv } from '../../../cli/testing/cli-process.js';
import { startWorkerProcess, tinyWorkerArgs } from '../../testing/queue-workers.js';
import { redisServerPath, startRedisServer, type RedisServer } from '../../testing/redis-server.js';
import { RANK_ALLOCATOR_DEFAULTS } from './allocator-env.js';
import { needsAllocatorRelaunch, RELAUNCHED_BY_ENV } from './relaunch.js';

const BIN = fileURLToPath(new URL('../../../../bin/distvae.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'distvae-relaunch-'));
const LOG = join(dir, 'started');
/** Preloaded into every process: one JSON line with its pid, parent and allocator settings. */
const HOOK = `data:text/javascript,${encodeURIComponent(
  `import { appendFileSync } from 'node:fs'; appendFileSync(${JSON.stringify(LOG)}, JSON.stringify({ pid: process.pid, ppid: process.ppid, arena: process.env.MALLOC_ARENA_MAX ?? null, mmap: process.env.MALLOC_MMAP_THRESHOLD_ ?? null, trim: process.env.MALLOC_TRIM_THRESHOLD_ ?? null }) + '\\n');`,
)}`;
interface Started {
  pid: number;
  ppid: number;
  arena: string | null;
  mmap: string | null;
  trim: string | null;
}
const started = (): Started[] =>
  readFileSync(LOG, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Started);
const clearLog = () => rmSync(LOG, { force: true });

/** The user's environment: no allocator settings, the hook preloaded, a marker to find what is left. */
function userEnv(marker: string, extra: Record<string, string> = {}): Record<string, string> {
  const env = { ...process.env, NODE_OPTIONS: `--import=${HOOK}`, DISTVAE_RELAUNCH_TEST: marker } as Record<string, string>;
  for (const name of [...Object.keys(RANK_ALLOCATOR_DEFAULTS), 'DISTVAE_RANK_ALLOCATOR', RELAUNCHED_BY_ENV]) delete env[name];
  return { ...env, ...extra };
}

async function runBin(
  argv: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...argv], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  return { code, signal, stderr };
}

/** Processes of a marker still alive after up to `ms` (a killed process takes the kernel a moment). */
async function leftAfter(marker: string, ms: number): Promise<number[]> {
  let left = processesWithEnv(`DISTVAE_RELAUNCH_TEST=${marker}`);
  for (let waited = 0; left.length > 0 && waited < ms; waited += 50) {
    await new Promise((r) => setTimeout(r, 50));
    left = left.filter(isAlive);
  }
  return left;
}

test('who is relaunched: a Linux process without the settings, unless opted out or relaunched already', () => {
  assert.equal(needsAllocatorRelaunch({}), true);
  assert.equal(needsAllocatorRelaunch({ MALLOC_ARENA_MAX: '2' }), true);
  assert.equal(needsAllocatorRelaunch({ ...RANK_ALLOCATOR_DEFAULTS }), false);
  assert.equal(needsAllocatorRelaunch({ MALLOC_ARENA_MAX: '', MALLOC_MMAP_THRESHOLD_: '1', MALLOC_TRIM_THRESHOLD_: '1' }), false);
  assert.equal(needsAllocatorRelaunch({ DISTVAE_RANK_ALLOCATOR: 'inherit' }), false);
  assert.equal(needsAllocatorRelaunch({ [RELAUNCHED_BY_ENV]: '1' }), false);
  assert.equal(needsAllocatorRelaunch({}, 'darwin'), false);
  assert.equal(needsAllocatorRelaunch({}, 'linux'), true);
});

test('decode --out-dir runs in a child with the settings, and its refusal is the launcher exit code', async () => {
  clearLog();
  const r = await runBin(['decode', '--out-dir', join(dir, 'out'), '--window', '0x0'], userEnv('code'));
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.signal, null);
  const [launcher, child, ...more] = started();
  assert.deepEqual(more, [], 'one relaunch, not a loop');
  assert.equal(launcher!.arena, null);
  assert.equal(child!.ppid, launcher!.pid);
  assert.deepEqual([child!.arena, child!.mmap, child!.trim], Object.values(RANK_ALLOCATOR_DEFAULTS));
});

test('no relaunch: a short command, the settings already set, or DISTVAE_RANK_ALLOCATOR=inherit', async () => {
  for (const [argv, extra] of [
    [['decode', '--window', '0x0'], {}],
    [['decode', '--out-dir', join(dir, 'out'), '--window', '0x0'], { ...RANK_ALLOCATOR_DEFAULTS }],
    [['worker', '--bogus'], { DISTVAE_RANK_ALLOCATOR: 'inherit' }],
  ] as const) {
    clearLog();
    const r = await runBin([...argv], userEnv('none', extra));
    assert.equal(r.code, 2, r.stderr);
    assert.equal(started().length, 1, argv.join(' '));
  }
});

const redis = redisServerPath();
let server: RedisServer | null = null;
before(async () => {
  if (redis) server = await startRedisServer();
});
after(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test(
  'a relaunched worker takes SIGTERM through its launcher, drains and exits 0; nothing is left',
  { skip: !redis && 'redis-server is not installed' },
  async () => {
    clearLog();
    const env = userEnv('term');
    const worker = await startWorkerProcess(server!.url, 'relaunch-term', tinyWorkerArgs(dir), env, {
      entry: 'bin',
      allocator: 'as-given',
    });
    const [launcher, child] = started();
    assert.equal(launcher!.pid, worker.child.pid);
    assert.equal(child!.ppid, launcher!.pid);
    assert.equal(child!.arena, RANK_ALLOCATOR_DEFAULTS['MALLOC_ARENA_MAX']);
    const { code, signal } = await worker.stop();
    // The worker got it (it drains, then exits 0), and the launcher exits with the worker's code.
    assert.match(worker.stderr(), /draining/);
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, worker.stderr());
    assert.deepEqual(await leftAfter('term', 2000), []);
  },
);

test('a launcher SIGKILLed leaves no worker behind', { skip: !redis && 'redis-server is not installed' }, async () => {
  clearLog();
  const worker = await startWorkerProcess(server!.url, 'relaunch-kill', tinyWorkerArgs(dir), userEnv('kill'), {
    entry: 'bin',
    allocator: 'as-given',
  });
  assert.equal(started().length, 2);
  worker.child.kill('SIGKILL');
  await once(worker.child, 'exit');
  assert.deepEqual(await leftAfter('kill', 5000), []);
});

test(
  'a relaunched worker killed by a signal kills its launcher by the same signal',
  { skip: !redis && 'redis-server is not installed' },
  async () => {
    clearLog();
    const worker = await startWorkerProcess(server!.url, 'relaunch-signal', tinyWorkerArgs(dir), userEnv('signal'), {
      entry: 'bin',
      allocator: 'as-given',
    });
    const child = started().find((s) => s.ppid === worker.child.pid)!;
    process.kill(child.pid, 'SIGKILL');
    const [code, signal] = (await once(worker.child, 'exit')) as [number | null, NodeJS.Signals | null];
    assert.deepEqual({ code, signal }, { code: null, signal: 'SIGKILL' });
  },
);
