// Benchmark of the Wan-architecture decoder at full width (published Wan 2.1 config, seeded
// synthetic weights): a video latent decoded whole and with the family's default tiling (window
// 256 px, overlap 64 px), each case in its own child process so that its peak RSS
// (`process.resourceUsage().maxRSS`) is its own. Besides latency and peak RSS it prints what a
// decode holds by design: the weights, and the causal history the frame loop threads (two input
// frames of every temporal conv, at the size of the largest tile) — the temporal state that,
// with one frame's activations, sets a Wan tile's memory whatever the frame count. Not a test:
// it measures, it does not assert.
//
//   npx tsx bench/wan-decode.ts [--cases tile,whole] [--height 480] [--width 832] [--frames 17] [--threads 2] [--seed 0]

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadVae } from '../src/decode/vae.js';
import type { ResolvedConfig } from '../src/families/types.js';
import { wanDecoderArchitecture, wanDecoderParams } from '../src/families/wan/graph.js';
import { tileGrid } from '../src/plan/grid.js';
import { setTiling } from '../src/plan/planner.js';
import { elementCount, seededTensor } from '../src/tensor.js';

const { values: args } = parseArgs({
  options: {
    cases: { type: 'string', default: 'tile,whole' },
    case: { type: 'string' },
    height: { type: 'string', default: '480' },
    width: { type: 'string', default: '832' },
    frames: { type: 'string', default: '17' },
    threads: { type: 'string', default: '2' },
    seed: { type: 'string', default: '0' },
  },
});

const MIB = 2 ** 20;

interface CaseResult {
  case: string;
  latent: number[];
  output: number[];
  tiles: number;
  largestTileLatent: [number, number];
  weightsMiB: number;
  historyMiB: number;
  loadSeconds: number;
  sessionsSeconds: number;
  decodeSeconds: number;
  peakRssMiB: number;
  rssBeforeDecodeMiB: number;
}

/**
 * Bytes of one copy of the causal history for a tile of h × w latent units: CACHE_T = 2 input
 * frames of every conv with a temporal kernel, at the spatial scale where it runs.
 */
function historyBytes(config: ResolvedConfig, h: number, w: number): number {
  const a = wanDecoderArchitecture(config);
  const frame = (channels: number, scale: number) => 2 * channels * h * scale * w * scale * 4;
  let bytes = frame(a.latentChannels, 1) + 4 * frame(a.midChannels, 1);
  a.upBlocks.forEach((b, i) => {
    const scale = 2 ** i;
    for (let j = 0; j < a.resnetsPerBlock; j++) bytes += frame(j === 0 ? b.inChannels : b.outChannels, scale) + frame(b.outChannels, scale);
    if (b.upsample === 'spatio-temporal') bytes += frame(b.outChannels, scale);
  });
  return bytes + frame(a.upBlocks[a.upBlocks.length - 1]!.outChannels, 2 ** (a.upBlocks.length - 1));
}

async function runCase(name: string): Promise<CaseResult> {
  const threads = Number(args.threads);
  const t0 = performance.now();
  const vae = await loadVae({ family: 'wan', weights: 'synthetic', seed: Number(args.seed) }, { threads });
  const loadSeconds = (performance.now() - t0) / 1000;
  if (name === 'tile') setTiling(vae);
  else if (name !== 'whole') throw new Error(`unknown case ${name}`);
  const r = vae.geometry.spatialRatio;
  const latent = [
    1,
    vae.geometry.latentChannels,
    (Number(args.frames) - 1) / vae.geometry.temporalRatio + 1,
    Number(args.height) / r,
    Number(args.width) / r,
  ];
  if (!latent.every((d) => Number.isInteger(d)))
    throw new Error(`size ${args.height}×${args.width}×${args.frames} is not whole latent units: ${latent}`);
  // Builds the first- and next-step sessions on a 1×1-latent, 2-frame decode (untiled).
  const t1 = performance.now();
  await vae.decode(seededTensor([1, latent[1]!, 2, 1, 1], 1));
  const sessionsSeconds = (performance.now() - t1) / 1000;
  const grid = tileGrid(vae, { frames: latent[2]!, height: latent[3]!, width: latent[4]! });
  const largest = grid.tiles.reduce<[number, number]>(
    (m, t) => ((t.y1 - t.y0) * (t.x1 - t.x0) > m[0] * m[1] ? [t.y1 - t.y0, t.x1 - t.x0] : m),
    [0, 0],
  );
  const z = seededTensor(latent, Number(args.seed) + 1);
  const rssBeforeDecodeMiB = process.memoryUsage().rss / MIB;
  const t2 = performance.now();
  const out = await vae.decode(z);
  const decodeSeconds = (performance.now() - t2) / 1000;
  const result: CaseResult = {
    case: name,
    latent,
    output: [...out.dims],
    tiles: grid.tiles.length,
    largestTileLatent: largest,
    weightsMiB: wanDecoderParams(vae.config).reduce((s, p) => s + elementCount(p.dims) * 4, 0) / MIB,
    historyMiB: historyBytes(vae.config, largest[0], largest[1]) / MIB,
    loadSeconds,
    sessionsSeconds,
    decodeSeconds,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
    rssBeforeDecodeMiB,
  };
  await vae.dispose();
  return result;
}

if (args.case) {
  console.log(JSON.stringify(await runCase(args.case)));
} else {
  const self = fileURLToPath(import.meta.url);
  const passOn = [
    '--height',
    args.height!,
    '--width',
    args.width!,
    '--frames',
    args.frames!,
    '--threads',
    args.threads!,
    '--seed',
    args.seed!,
  ];
  console.log(
    `Wan 2.1 decoder (published config, synthetic weights), ${args.height}×${args.width}×${args.frames} frames, ${args.threads} threads, 1 rank`,
  );
  console.log(
    '| case | latent | tiles (largest, latent) | decode s | peak RSS MiB | RSS before decode MiB | weights MiB | history MiB (1 copy) | sessions s |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const name of args.cases!.split(',')) {
    const child = spawnSync(process.execPath, ['--import', 'tsx', self, '--case', name, ...passOn], {
      encoding: 'utf8',
      maxBuffer: 1 << 24,
    });
    const line = child.stdout.trim().split('\n').pop() ?? '';
    if (child.status !== 0 || !line.startsWith('{')) {
      console.log(
        `| ${name} | failed (exit ${child.status}, signal ${child.signal}) ${child.stderr.trim().split('\n').slice(-3).join(' / ')} |`,
      );
      continue;
    }
    const r = JSON.parse(line) as CaseResult;
    const f = (v: number, d = 0) => v.toFixed(d);
    console.log(
      `| ${r.case} | ${r.latent.slice(2).join('×')} | ${r.tiles} (${r.largestTileLatent.join('×')}) | ${f(r.decodeSeconds, 1)} | ${f(r.peakRssMiB)} | ${f(r.rssBeforeDecodeMiB)} | ${f(r.weightsMiB)} | ${f(r.historyMiB)} | ${f(r.sessionsSeconds, 1)} |`,
    );
  }
}
