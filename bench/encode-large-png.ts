// A large PNG encoded in tiles without holding the float image (issue 28 item 5): a 16384×16384 RGB
// PNG (written band by band, bench/latent-file.ts) through a tiny synthetic AutoencoderKL encoder
// (8 channels, r = 8, no mid-block attention: the cost is the reading and the tiles, not the
// arithmetic) with `distvae encode --window W --overlap O --json` under /usr/bin/time -f %M: the
// process's peak RSS beside the float image's size (3 × H × W × 4 bytes), and the bytes of input
// bands it held (`bandBytes`: the tiles' bands and the PNG rows its source kept).
//
//   npx tsx bench/encode-large-png.ts [--size 16384] [--window 1024] [--overlap 128] [--threads 2] [--out bench/results/encode-large-png.json]

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { calibrationImageFile } from './latent-file.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1]! : fallback;
};
const size = Number(flag('size', '16384'));
const window = Number(flag('window', '1024'));
const overlap = Number(flag('overlap', '128'));
const threads = Number(flag('threads', '2'));
const outPath = flag('out', join(ROOT, 'bench', 'results', 'encode-large-png.json'));
const TMP = join(flag('tmp', '/tmp'), `distvae-encode-large-${process.pid}`);
mkdirSync(TMP, { recursive: true });
const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();
const mib = (b: number) => Math.round(b / 2 ** 20);

const before = uptime();
let started = performance.now();
const image = calibrationImageFile(TMP, size, size);
const writeSeconds = (performance.now() - started) / 1000;
const config = join(TMP, 'tiny-kl.json');
writeFileSync(
  config,
  JSON.stringify({
    _class_name: 'AutoencoderKL',
    block_out_channels: [8, 8, 8, 8],
    layers_per_block: 1,
    norm_num_groups: 4,
    latent_channels: 4,
    mid_block_add_attention: false,
  }),
);
const out = join(TMP, 'z.npy');
const args = [
  join(ROOT, 'bin', 'distvae.js'),
  'encode',
  '--synthetic',
  '--config',
  config,
  '--image',
  image,
  '--out',
  out,
  '--window',
  `${window}x${window}`,
  '--overlap',
  `${overlap}x${overlap}`,
  '--threads',
  String(threads),
  '--json',
];
started = performance.now();
const r = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, ...args], { encoding: 'utf8', maxBuffer: 1 << 24 });
const wall = (performance.now() - started) / 1000;
if (r.status !== 0) throw new Error(`encode failed: ${r.stderr.slice(-2000)}`);
const report = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
  seconds: number;
  tiles: number;
  reading: string;
  bandBytes: number;
  shape: number[];
  memory: { predictedPeakBytes: number | null; coordinator: { measuredPeakBytes: number | null } };
};
const peakBytes = Number(r.stderr.trim().split('\n').pop()) * 1024;
const floatImageBytes = 3 * size * size * 4;
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
const cell = {
  image: `${size}x${size} PNG (${mib(statSync(image).size)} MiB on disk, written in ${writeSeconds.toFixed(0)} s)`,
  plan: `tile ${window}/${overlap}`,
  tiles: report.tiles,
  reading: report.reading,
  latents: report.shape,
  encodeSeconds: report.seconds,
  wallSeconds: wall,
  peakRssMiB: mib(peakBytes),
  floatImageMiB: mib(floatImageBytes),
  peakOverFloatImage: peakBytes / floatImageBytes,
  bandMiB: Number((report.bandBytes / 2 ** 20).toFixed(1)),
  predictedPeakMiB: report.memory.predictedPeakBytes === null ? null : mib(report.memory.predictedPeakBytes),
};
const after = uptime();
const machine = `${process.platform} ${process.arch}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${cpus()[0]?.model ?? 'cpu'} (${cpus().length} cores), Node ${process.version}`;
const command = `npx tsx bench/encode-large-png.ts --size ${size} --window ${window} --overlap ${overlap} --threads ${threads}`;
const json = {
  schema: 1,
  benchmark: 'encode-large-png',
  ran: { date: new Date().toISOString(), command, commit, machine, uptimeBefore: before, uptimeAfter: after },
  cells: [cell],
};
writeFileSync(outPath, JSON.stringify(json, null, 2) + '\n');
writeFileSync(
  outPath.replace(/\.json$/, '.md'),
  [
    '# A 16384² PNG encoded in tiles, band by band',
    '',
    `\`${command}\` at ${commit}, ${json.ran.date}, ${machine}. Uptime before: ${before}; after: ${after} (a machine shared with other jobs: seconds are noisy, the peak is not).`,
    '',
    "A tiny synthetic AutoencoderKL encoder (8 channels, r = 8, no attention) so the cost is the reading and the tiles. Peak: /usr/bin/time -f %M of the whole `distvae encode` process (runtime, weights, sessions, latents, the bands). Bands: the most bytes of input rows it held at once (the tiles' bands plus the rows the PNG source kept).",
    '',
    '| image | plan | tiles | reading | latents | encode s | peak RSS MiB | float image MiB | peak / float image | bands held MiB | predicted MiB |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    `| ${cell.image} | ${cell.plan} | ${cell.tiles} | ${cell.reading} | [${cell.latents.join(', ')}] | ${cell.encodeSeconds.toFixed(1)} | ${cell.peakRssMiB} | ${cell.floatImageMiB} | ${cell.peakOverFloatImage.toFixed(3)} | ${cell.bandMiB} | ${cell.predictedPeakMiB ?? '–'} |`,
    '',
  ].join('\n'),
);
rmSync(TMP, { recursive: true, force: true });
process.stderr.write(`${JSON.stringify(cell)}\nwrote ${outPath}\n`);
