// What tiling costs and what it saves, on the SD 1.x decoder (synthetic weights, SD's default
// plan: window 512 px, overlap 128 px):
// - time overhead: time(tiled) / (time(full) × decodedAreaRatio) on a moderate latent, full and
//   tiled decodes alternated on one session (the decoded-area ratio charges tiling for the
//   overlap it decodes twice, so the quotient isolates per-tile inefficiency and assembly);
// - peak memory: a tiled decode of a large image next to the whole decode (or its failure), each
//   in its own child process, peak RSS from process.resourceUsage().maxRSS.
// Not a test: it measures.
//
//   npx tsx bench/tiled-overhead.ts [--threads 2] [--repeat 3] [--size 768] [--rss-size 2048] [--section time,rss]

import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadVae, type Vae } from '../src/decode/vae.js';
import { isDistVaeError } from '../src/errors.js';
import { seededTensor } from '../src/tensor.js';
import { tileGrid } from '../src/plan/grid.js';
import { gridMetrics } from '../src/plan/metrics.js';
import { setTiling } from '../src/plan/planner.js';
import type { Tensor } from '../src/tensor.js';
import { cpuPressure, roundRobin, summarise } from './timing.js';

const { values: args } = parseArgs({
  options: {
    threads: { type: 'string', default: '2' },
    repeat: { type: 'string', default: '3' },
    size: { type: 'string', default: '768' },
    'rss-size': { type: 'string', default: '2048' },
    section: { type: 'string', default: 'time,rss' },
    child: { type: 'string' },
    'no-spinning': { type: 'boolean', default: false },
  },
});
const THREADS = Number(args.threads);
const SD_CONFIG = { block_out_channels: [128, 256, 512, 512], layers_per_block: 2, latent_channels: 4, sample_size: 512 };
const fmt = (v: number, d = 2) => v.toFixed(d);

/** Spinning off makes CPU time ≈ work, a usable measure when other jobs hold the cores. */
const loadSd = () =>
  loadVae(
    { family: 'autoencoder-kl', config: SD_CONFIG, weights: 'synthetic', seed: 0 },
    { threads: THREADS, allowSpinning: !args['no-spinning'] },
  );
const latentFor = (px: number): Tensor => seededTensor([1, 4, px / 8, px / 8], 7);

function tiling(vae: Vae, tiled: boolean): void {
  if (tiled) setTiling(vae);
  else setTiling(vae, 'off');
}

interface ChildResult {
  mode: string;
  size: number;
  ok: boolean;
  seconds: number;
  maxRssBytes: number;
  rssAfterLoadBytes: number;
  tiles?: number;
  error?: string;
}

/** Child process: one decode of a size × size image, whole or tiled, reporting its peak RSS. */
async function child(mode: string, size: number): Promise<void> {
  const vae = await loadSd();
  const rssAfterLoadBytes = process.memoryUsage().rss;
  tiling(vae, mode === 'tiled');
  const z = latentFor(size);
  const result: ChildResult = { mode, size, ok: true, seconds: 0, maxRssBytes: 0, rssAfterLoadBytes };
  const t0 = performance.now();
  try {
    await vae.decode(z, { onProgress: (e) => (result.tiles = e.tilesTotal) });
  } catch (e) {
    result.ok = false;
    result.error = isDistVaeError(e) ? `${e.code}: ${e.message}` : String(e);
  }
  result.seconds = (performance.now() - t0) / 1000;
  result.maxRssBytes = process.resourceUsage().maxRSS * 1024;
  console.log(JSON.stringify(result));
  await vae.dispose();
}

// On a shared machine, if memory runs out the kernel should kill this benchmark, not a bystander.
writeFileSync('/proc/self/oom_score_adj', '1000');

if (args.child) {
  await child(args.child, Number(args['rss-size']));
} else {
  const sections = new Set(args.section!.split(','));
  if (sections.has('time')) {
    const size = Number(args.size);
    const vae = await loadSd();
    const z = latentFor(size);
    setTiling(vae);
    const metrics = gridMetrics(tileGrid(vae, { height: size / 8, width: size / 8, frames: 1 }));
    console.log(
      `SD 1.x decoder, ${size}×${size} px (latent ${size / 8}²), window 512 px, overlap 128 px: ${metrics.tiles} tiles (${metrics.rows}×${metrics.columns}), decoded-area ratio ${fmt(metrics.decodedAreaRatio, 4)}; ${THREADS} threads`,
    );
    const decode = (tiled: boolean) => async () => {
      tiling(vae, tiled);
      await vae.decode(z);
    };
    await decode(false)();
    await decode(true)();
    const pressure = cpuPressure();
    const [full, tiled] = (await roundRobin(THREADS, Number(args.repeat), [decode(false), decode(true)])).map(summarise);
    console.log(
      `  [cpu pressure avg10 before ${pressure}%, after ${cpuPressure()}%; clean rounds ${full!.cleanRuns},${tiled!.cleanRuns} of ${full!.runs}]`,
    );
    console.log(`  full  ${fmt(full!.medianMs / 1000)} / ${fmt(full!.minMs / 1000)} s (median / min)`);
    console.log(`  tiled ${fmt(tiled!.medianMs / 1000)} / ${fmt(tiled!.minMs / 1000)} s`);
    console.log(
      `  overhead time(tiled) / (time(full) × ratio) = ${fmt(tiled!.medianMs / (full!.medianMs * metrics.decodedAreaRatio), 3)} (medians), ${fmt(tiled!.minMs / (full!.minMs * metrics.decodedAreaRatio), 3)} (minima); ` +
        `by CPU time ${fmt(tiled!.medianCpuMs / (full!.medianCpuMs * metrics.decodedAreaRatio), 3)} (${fmt(full!.medianCpuMs / 1000)} / ${fmt(tiled!.medianCpuMs / 1000)} CPU-s)`,
    );
    await vae.dispose();
  }
  if (sections.has('rss')) {
    const size = Number(args['rss-size']);
    console.log(`\npeak RSS, SD 1.x decoder, ${size}×${size} px, one child process per decode (${THREADS} threads):`);
    for (const mode of ['tiled', 'full']) {
      const childArgs = [
        '--child',
        mode,
        '--rss-size',
        String(size),
        '--threads',
        String(THREADS),
        ...(args['no-spinning'] ? ['--no-spinning'] : []),
      ];
      const run = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...childArgs], {
        encoding: 'utf8',
        maxBuffer: 1 << 24,
      });
      const line = run.stdout.trim().split('\n').pop() ?? '';
      if (run.status === 0 && line.startsWith('{')) {
        const r = JSON.parse(line) as ChildResult;
        const gib = (b: number) => `${fmt(b / 2 ** 30)} GiB`;
        console.log(
          `  ${mode.padEnd(5)} ${r.ok ? 'ok' : 'FAILED'} in ${fmt(r.seconds, 1)} s${r.tiles ? `, ${r.tiles} tiles` : ''}: peak RSS ${gib(r.maxRssBytes)} (after load ${gib(r.rssAfterLoadBytes)})${r.error ? ` — ${r.error}` : ''}`,
        );
      } else {
        console.log(
          `  ${mode.padEnd(5)} child ended with status ${run.status} signal ${run.signal}: ${(run.stderr || run.stdout).trim().split('\n').slice(-3).join(' | ')}`,
        );
      }
    }
  }
}
