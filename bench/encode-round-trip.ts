// The TAEF2 round trip through each encode path (issue 28's done-when, measured at a larger size
// than the test's): a crop of ../shared/data/photo-2048x768.jpg encoded by the trained TAEF2
// encoder — whole; row-sharded on 2 local ranks (then decoded row-sharded on 2 ranks); tiled
// as the Family T loop blends tiles, at the given windows — and decoded by the TAEF2 decoder
// (whole, but for the sharded path). Reports each path's latents against the whole encode's
// (max abs) and its round-trip PSNR against the photo (docs/design.md §9: the decode mapped to
// [0, 1], float), with seconds (noisy on the shared machine: `uptime` is recorded). TAEF2's pool
// GroupNorms make the blended tiles inexact (each tile normalises alone); row sharding merges
// the statistics, so it is exact. Not a test: it measures. Results:
// bench/results/encode-round-trip-<crop>.{json,md}.
//
//   npx tsx bench/encode-round-trip.ts [--crop HxW] [--windows 256,128] [--shared DIR]

import { execSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sliceLatent } from '../src/decode/latents.js';
import { loadVae, type Vae } from '../src/decode/vae.js';
import { loadEncoder, type Encoder } from '../src/encode/encoder.js';
import { tae } from '../src/families/tae/spec.js';
import { readImage, sampleToImage } from '../src/io/image.js';
import { maxAbsDiff, psnr } from '../src/io/quality.js';
import { setTiling } from '../src/plan/planner.js';
import { localGroup } from '../src/ranks/local/index.js';
import { useStrategy } from '../src/strategies/index.js';
import type { Tensor } from '../src/tensor.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS = join(HERE, 'results');
const { values: args } = parseArgs({
  options: { crop: { type: 'string', default: '384x512' }, windows: { type: 'string', default: '256,128' }, shared: { type: 'string' } },
});
const SHARED = args.shared ?? join(HERE, '../../shared');
const ENCODER = join(SHARED, 'models/taef2/taef2_encoder.pth');
const DECODER = join(SHARED, 'models/taef2/taef2_decoder.pth');
const PHOTO = join(SHARED, 'data/photo-2048x768.jpg');
for (const p of [ENCODER, DECODER, PHOTO]) if (!existsSync(p)) throw new Error(`${p} is absent: pass --shared DIR (the ../shared data)`);
const [cropH, cropW] = args.crop.split('x').map(Number) as [number, number];
const windows = args.windows.split(',').map(Number);

const uptime = () => execSync('uptime').toString().trim();
const ran = {
  command: `npx tsx bench/encode-round-trip.ts${process.argv.slice(2).length ? ' ' + process.argv.slice(2).join(' ') : ''}`,
  commit: execSync('git rev-parse --short HEAD').toString().trim(),
  machine: `${execSync('uname -m').toString().trim()}, ${execSync('nproc').toString().trim()} cores (shared by ~8 helpers), CPU provider, 1 thread per rank`,
  image: `photo-2048x768.jpg rows 64..${64 + cropH}, cols 96..${96 + cropW} (${cropH}x${cropW})`,
  uptimeBefore: uptime(),
  uptimeAfter: '',
};

interface Cell {
  path: string;
  encode: string;
  decode: string;
  latentMaxAbsVsWhole: number;
  psnrDb: number;
  psnrMinusWholeDb: number;
  encodeSeconds: number;
  decodeSeconds: number;
}

async function timed<T>(f: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  const t0 = performance.now();
  const value = await f();
  return { value, seconds: (performance.now() - t0) / 1000 };
}

const photo = sliceLatent(readImage(PHOTO), { y0: 64, y1: 64 + cropH, x0: 96, x1: 96 + cropW });
const encoder: Encoder = await loadEncoder(ENCODER, { family: 'tae', threads: 1 });
const vae: Vae = await loadVae(DECODER, { family: 'tae', threads: 1 });
const group = localGroup({ ranks: 2, isolation: 'thread', threadsPerRank: 1 });
const cells: Cell[] = [];
try {
  setTiling(encoder, 'off');
  setTiling(vae, 'off');
  const roundTrip = async (z: Tensor) => timed(async () => psnr(sampleToImage(await vae.decode(z), tae.sampleRange), photo));
  const whole = await timed(() => encoder.encode(photo));
  const wholeDb = await roundTrip(whole.value);
  const cell = (
    path: string,
    encode: string,
    decode: string,
    z: { value: Tensor; seconds: number },
    db: { value: number; seconds: number },
  ) => {
    const c: Cell = {
      path,
      encode,
      decode,
      latentMaxAbsVsWhole: maxAbsDiff(z.value, whole.value),
      psnrDb: db.value,
      psnrMinusWholeDb: db.value - wholeDb.value,
      encodeSeconds: z.seconds,
      decodeSeconds: db.seconds,
    };
    cells.push(c);
    console.log(JSON.stringify(c));
  };
  cell('whole', 'whole, one call', 'whole, one call', whole, wholeDb);

  await group.start();
  useStrategy(encoder, 'shard', group);
  useStrategy(vae, 'shard', group);
  const sharded = await timed(() => encoder.encode(photo));
  cell('shard 2+2', 'row-sharded, 2 thread ranks', 'row-sharded, 2 thread ranks', sharded, await roundTrip(sharded.value));
  useStrategy(encoder, 'tile', null);
  useStrategy(vae, 'tile', null);

  for (const w of windows) {
    const overlap = w / 4;
    setTiling(encoder, { window: { height: w, width: w }, overlap: { height: overlap, width: overlap } });
    const tiled = await timed(() => encoder.encode(photo));
    cell(
      `tiled ${w}/${overlap}`,
      `blended tiles, window ${w} px, overlap ${overlap} px`,
      'whole, one call',
      tiled,
      await roundTrip(tiled.value),
    );
  }
} finally {
  await group.close();
  await encoder.dispose();
  await vae.dispose();
}
ran.uptimeAfter = uptime();
mkdirSync(RESULTS, { recursive: true });
writeFileSync(join(RESULTS, `encode-round-trip-${args.crop}.json`), JSON.stringify({ schema: 1, ran, cells }, null, 2) + '\n');
const md = [
  `# TAEF2 round trip by encode path (${ran.image})`,
  '',
  `\`${ran.command}\` at ${ran.commit}; ${ran.machine}.`,
  `uptime before: ${ran.uptimeBefore}; after: ${ran.uptimeAfter} (the seconds are noisy).`,
  '',
  '| path | encode | decode | latents max abs vs whole | PSNR (dB) | − whole (dB) | encode s | decode s |',
  '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ...cells.map(
    (c) =>
      `| ${c.path} | ${c.encode} | ${c.decode} | ${c.latentMaxAbsVsWhole.toExponential(2)} | ${c.psnrDb.toFixed(4)} | ${c.psnrMinusWholeDb.toFixed(4)} | ${c.encodeSeconds.toFixed(1)} | ${c.decodeSeconds.toFixed(1)} |`,
  ),
  '',
];
writeFileSync(join(RESULTS, `encode-round-trip-${args.crop}.md`), md.join('\n'));
