// `distvae analyze`: the locality report of a decoder graph — per stage its halo in latent rows
// and in rows of its inputs and outputs, the nonlocal ops by node, whether halo-exact tiling is
// possible (and with what halo) and whether row sharding is; with --ranks and a size, the
// collectives each rank would send. Reads a checkpoint (--vae) or an architecture alone
// (--family / --config: the graph is built with zero weights, as the analysis reads shapes only).

import { decoderGraphOf } from '../../entries/decode.js';
import { type RawConfig } from '../../entries/families.js';
import { analyzeLocality } from '../../entries/graph.js';
import { predictCollectives, shardPlan, splitBands } from '../../entries/ranks.js';
import { readConfigJson } from '../../entries/sources.js';
import { JSON_OPTION, type CommandSpec } from '../args.js';
import { formatLocality, localityJson } from '../locality-format.js';
import { FAMILY_OPTIONS } from '../tiling-options.js';

export const analyzeCommand: CommandSpec = {
  name: 'analyze',
  summary: 'locality of a decoder graph: halos per stage, nonlocal ops, whether halo-exact tiling and row sharding work',
  usage: [
    'distvae analyze --vae PATH [--family F] [--json]',
    'distvae analyze --family F [--config config.json] [--json]',
    'distvae analyze ... --ranks R --height H --width W   (adds the collectives each rank sends)',
  ],
  options: [
    { name: 'vae', kind: 'string', value: 'PATH', description: 'diffusers folder or weights file (.safetensors/.pth, with --family)' },
    ...FAMILY_OPTIONS,
    { name: 'ranks', kind: 'string', value: 'R', description: 'ranks of a row-sharded decode whose collectives to predict' },
    { name: 'height', kind: 'string', value: 'H', description: 'output height in pixels (with --ranks)' },
    { name: 'width', kind: 'string', value: 'W', description: 'output width in pixels (with --ranks)' },
    JSON_OPTION,
  ],
  details: [
    'Computed from the graph the family builds (its nodes, and the GroupNorm / attention regions it records), not from',
    'architecture knowledge. Halos are in latent rows; a stage that upsamples reads fewer rows of its input than it',
    'crops from its output. Halo-exact tiling is refused, naming the ops, when any op reads every position.',
  ],
  async run(args, io) {
    const path = args.string('vae');
    const family = args.string('family');
    const configPath = args.string('config');
    const ranks = args.int('ranks', { min: 1, max: 4096 });
    const height = args.int('height');
    const width = args.int('width');
    if (path === undefined && family === undefined && configPath === undefined) {
      args.refuse(
        '--vae',
        undefined,
        'a path, or --family / --config',
        'pass --vae PATH, or --family F (and optionally --config) to analyse an architecture',
      );
    }
    if (ranks !== undefined && (height === undefined || width === undefined)) {
      args.refuse(
        '--ranks',
        ranks,
        'with --height and --width',
        '--ranks needs --height and --width (output pixels) to predict collectives',
      );
    }
    args.done();
    const config: RawConfig | undefined = configPath === undefined ? undefined : readConfigJson(configPath);
    const { model, config: resolved } = await decoderGraphOf({
      ...(path !== undefined ? { path } : {}),
      ...(family !== undefined ? { family } : {}),
      ...(config !== undefined ? { config } : {}),
    });
    const spatialRatio = resolved.geometry.spatialRatio;
    const report = localityJson(analyzeLocality(model));
    if (ranks !== undefined) {
      for (const [name, v] of [
        ['--height', height!],
        ['--width', width!],
      ] as const) {
        if (v % spatialRatio !== 0)
          args.refuse(name, v, `a multiple of ${spatialRatio}`, `${name} ${v} is not a multiple of the spatial ratio ${spatialRatio}`);
      }
      args.done();
      const latent = { height: height! / spatialRatio, width: width! / spatialRatio };
      const bands = splitBands(latent.height, ranks, spatialRatio);
      report.collectives = { ranks, latent, perRank: predictCollectives(shardPlan(model), bands, latent.height, latent.width, 1) };
    }
    io.stdout(args.flag('json') ? JSON.stringify(report) + '\n' : formatLocality(report));
    return 0;
  },
};
