// `distvae demo` (npm run demo): the main job on a built-in default. Until decoding lands it
// plans a 1024 x 1536 SD 1.x decode over 2 ranks and prints the plan.

import { createVae } from '../../families/registry.js';
import { enableDefaultTiling } from '../../plan/planner.js';
import { planReport } from '../../plan/report.js';
import type { CommandSpec } from '../args.js';
import { formatPlan } from '../format.js';

export const demoCommand: CommandSpec = {
  name: 'demo',
  summary: 'run the main job on a built-in default (plan a 1024x1536 SD 1.x decode over 2 ranks)',
  usage: ['distvae demo'],
  options: [],
  async run(_args, io) {
    const vae = createVae('autoencoder-kl');
    enableDefaultTiling(vae);
    io.stdout(formatPlan(planReport(vae, { height: 1024, width: 1536 }, 2)));
    return 0;
  },
};
