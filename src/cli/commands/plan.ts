// `distvae plan`: validate a tile plan for a size and show its grid, metrics and schedule, or
// search plans (--search) and show the frontier and the coarse / balanced / fine picks.

import { planReport, searchPlans } from '../../index.js';
import { JSON_OPTION, type CommandSpec } from '../args.js';
import { formatPlan, formatSearch } from '../format.js';
import { FAMILY_OPTIONS, SIZE_OPTIONS, TILING_OPTIONS, applyTilingOptions, readSampleShape, readVaeSpec } from '../tiling-options.js';

export const planCommand: CommandSpec = {
  name: 'plan',
  summary: 'validate a tile plan and show its grid, metrics and per-rank schedule; or search plans',
  usage: [
    'distvae plan --family F [--config config.json] --height H --width W [--frames N] [--window HxW] [--overlap HxW] [--ranks R] [--json]',
    'distvae plan --search --family F [--config config.json] --height H --width W [--frames N] --ranks R [--json]',
  ],
  options: [
    ...FAMILY_OPTIONS,
    ...SIZE_OPTIONS,
    ...TILING_OPTIONS,
    { name: 'ranks', kind: 'string', value: 'R', description: 'ranks the tiles are dealt to (by work, not count)', defaultText: '1' },
    { name: 'search', kind: 'boolean', description: 'search plans: Pareto frontier over (window area, decoded area, imbalance, tile columns) and coarse / balanced / fine picks' },
    JSON_OPTION,
  ],
  details: [
    'Sizes are HEIGHTxWIDTH in output pixels. Windows and overlaps are exact: a request that does not map to whole',
    'latent units is refused with the reasons (exit code 2), never rounded. With fewer tiles than ranks, each tile gets',
    'its own rank and the other ranks stay idle (work is never duplicated).',
  ],
  async run(args, io) {
    const ranks = args.int('ranks', { min: 1, max: 4096 }) ?? 1;
    args.done();
    const vae = readVaeSpec(args);
    const sample = readSampleShape(args, vae);
    if (args.flag('search')) {
      for (const name of ['window', 'overlap']) {
        if (args.has(name)) args.refuse(`--${name}`, args.values[name], 'absent with --search', `--${name} cannot be combined with --search (the search chooses windows)`);
      }
      args.done();
      const result = searchPlans(vae, sample, ranks);
      io.stdout(args.flag('json') ? JSON.stringify(result) + '\n' : formatSearch(result));
      return 0;
    }
    applyTilingOptions(args, vae, sample);
    const report = planReport(vae, sample, ranks);
    io.stdout(args.flag('json') ? JSON.stringify(report) + '\n' : formatPlan(report));
    return 0;
  },
};
