// Peak RSS of `distvae decode ... --out X.png` as the image grows taller with the same window:
// PNG output is written band by band as tile rows finish, so the peak should not grow with the
// height (issue 17's target: 16384 x 1024 within 1.15x of 2048 x 1024). Each size runs in its
// own process under /usr/bin/time; synthetic weights of a small AutoencoderKL (ratio 8) keep it
// quick. Usage: npx tsx bench/stream-peak.ts [--heights 2048,16384,32768] [--width 1024]
//   [--window 512x512] [--overlap 64x64] [--config tiny|sd] [--threads 1] [--ranks N [--isolation thread|process]]
//   [--vae FILE --family F --channels C] [--ext png|npy]
// --vae decodes trained weights (e.g. ../shared/models/taef2/taef2_decoder.pth --family tae --channels 32)
// instead of the synthetic --config; --ext picks the streamed output format.
// With --ranks the tiles come from several ranks (the bands stream all the same).
// Each size's line is printed as soon as it finishes (a long SD run can be read as it goes).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runWithPeak } from './peak-rss.js';
import { seededTensor } from '../src/tensor.js';
import { writeNpy } from '../src/io/npy.js';

const { values } = parseArgs({
  options: {
    heights: { type: 'string', default: '2048,16384' },
    width: { type: 'string', default: '1024' },
    window: { type: 'string', default: '512x512' },
    overlap: { type: 'string', default: '64x64' },
    config: { type: 'string', default: 'tiny' },
    threads: { type: 'string', default: '1' },
    ranks: { type: 'string' },
    isolation: { type: 'string', default: 'thread' },
    vae: { type: 'string' },
    family: { type: 'string' },
    channels: { type: 'string', default: '4' },
    ext: { type: 'string', default: 'png' },
  },
});
const CONFIGS: Record<string, object> = {
  tiny: { _class_name: 'AutoencoderKL', block_out_channels: [8, 8, 8, 8], layers_per_block: 1, norm_num_groups: 4, latent_channels: 4 },
  // SD 1.x's decoder architecture (synthetic weights): the realistic case.
  sd: {
    _class_name: 'AutoencoderKL',
    block_out_channels: [128, 256, 512, 512],
    layers_per_block: 2,
    norm_num_groups: 32,
    latent_channels: 4,
  },
};
const dir = mkdtempSync(join(tmpdir(), 'distvae-stream-peak-'));
try {
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify(CONFIGS[values.config!]));
  const width = Number(values.width);
  const rows: { height: number; width: number; peakMiB: number; seconds: number }[] = [];
  for (const height of values.heights!.split(',').map(Number)) {
    const z = join(dir, `z-${height}.npy`);
    writeNpy(z, seededTensor([1, Number(values.channels), height / 8, width / 8], 1));
    const t0 = performance.now();
    const run = runWithPeak(
      [
        'src/cli/main.ts',
        'decode',
        ...(values.vae ? ['--vae', values.vae] : ['--synthetic', '--config', config]),
        ...(values.family ? ['--family', values.family] : []),
        '--latents',
        z,
        '--out',
        join(dir, `x-${height}.${values.ext!}`),
        '--window',
        values.window!,
        '--overlap',
        values.overlap!,
        '--threads',
        values.threads!,
        ...(values.ranks ? ['--ranks', values.ranks, '--isolation', values.isolation!] : []),
      ],
      `decode ${height}x${width}`,
    );
    const row = { height, width, peakMiB: run.peakMiB, seconds: Math.round((performance.now() - t0) / 100) / 10 };
    rows.push(row);
    rmSync(z);
    console.log(
      `${row.height} x ${row.width}: peak ${row.peakMiB} MiB (${(row.peakMiB / rows[0]!.peakMiB).toFixed(3)}x of the first), ${row.seconds} s`,
    );
  }
  console.log(
    JSON.stringify({
      ...(values.vae ? { vae: values.vae, family: values.family } : { config: values.config }),
      ext: values.ext,
      window: values.window,
      overlap: values.overlap,
      ...(values.ranks ? { ranks: Number(values.ranks), isolation: values.isolation } : {}),
      rows,
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
