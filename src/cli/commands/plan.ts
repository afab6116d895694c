// `distvae plan`: validate a tile plan for a size and show its grid, metrics and schedule, or
// search plans (--search) and show the frontier and the coarse / balanced / fine picks.

import { alternativeJson, choiceJson, memoryJson, resolvePrecision } from '../../entries/decode.js';
import { PRECISIONS } from '../../entries/graph.js';
import {
  checkRequestFits,
  describePlan,
  fitsBudget,
  formatSeconds,
  hasMemoryModel,
  namedAlternative,
  planOfTiling,
  predictTime,
  searchWithinBudget,
  toneDrift,
} from '../../entries/memory.js';
import { budgetRefusal, chooseWithinBudget, formatBytes, planReport, predictMemory, searchPlans, setTiling } from '../../index.js';
import { checkAdapters } from '../../entries/ranks.js';
import { JSON_OPTION, type CommandSpec } from '../args.js';
import { formatPlan, formatSearch } from '../format.js';
import { MEMORY_OPTIONS, readBudgetOptions } from '../memory-options.js';
import { FAMILY_OPTIONS, SIZE_OPTIONS, TILING_OPTIONS, applyTilingOptions, readSampleShape, readVaeSpec } from '../tiling-options.js';

export const planCommand: CommandSpec = {
  name: 'plan',
  summary: 'validate a tile plan and show its grid, metrics and per-rank schedule; or search plans',
  usage: [
    'distvae plan --family F [--config config.json] --height H --width W [--frames N] [--window HxW] [--overlap HxW] [--ranks R] [--json]',
    'distvae plan --search --family F [--config config.json] --height H --width W [--frames N] --ranks R [--max-memory SIZE] [--json]',
    'distvae plan --family F --height H --width W [--ranks R] --max-memory SIZE [--max-tensor SIZE] [--json]   (the plan the memory policy chooses, and the ranked alternatives)',
    'distvae plan --provider webgpu --family F --height H --width W [--ranks R] [--max-tensor SIZE] [--json]   (the plan that fits the GPU buffer limits and the budget)',
  ],
  options: [
    ...FAMILY_OPTIONS,
    ...SIZE_OPTIONS,
    ...TILING_OPTIONS,
    { name: 'ranks', kind: 'string', value: 'R', description: 'ranks the tiles are dealt to (by work, not count)', defaultText: '1' },
    {
      name: 'provider',
      kind: 'string',
      value: 'NAME',
      description: "the execution provider the plan is for: on webgpu every plan's largest tensor must fit the buffer limits",
      defaultText: 'cpu',
    },
    {
      name: 'device',
      kind: 'string',
      value: 'ID[,ID...]',
      description: 'webgpu adapters of `distvae devices` the ranks run on: checked, and their limits planned against',
    },
    ...MEMORY_OPTIONS,
    {
      name: 'precision',
      kind: 'string',
      value: 'P',
      description:
        "the decode's precision the memory model predicts (fp16: a GPU decode's 2-byte tensors; a config with force_upcast stays fp32)",
      defaultText: 'fp32',
    },
    { name: 'force-fp16', kind: 'boolean', description: 'with --precision fp16: predict fp16 even where the config sets force_upcast' },
    {
      name: 'search',
      kind: 'boolean',
      description:
        'search plans: Pareto frontier over (window area, decoded area, imbalance, tile columns) and coarse / balanced / fine picks; with --max-memory only plans predicted to fit (nothing fits: exit 2)',
    },
    JSON_OPTION,
  ],
  details: [
    'Sizes are HEIGHTxWIDTH in output pixels. Windows and overlaps are exact: a request that does not map to whole',
    'latent units is refused with the reasons (exit code 2), never rounded. With fewer tiles than ranks, each tile gets',
    'its own rank and the other ranks stay idle (work is never duplicated).',
    'The JSON adds memory { budgetBytes, predictedPeakBytes, predictedMaxTensorBytes, coordinator, ranks } (the memory',
    "model's prediction for the plan; families without a memory model: null) and choice (with predictedSeconds, the time",
    "model's). With --max-memory (and no window options) the plan is the memory policy's choice: among the plans whose",
    'predicted peak fits, the most exact class first — the whole decode or row sharding, then halo-exact tiles, then',
    'blended tiles — and within a class the fastest by the time model (on one CPU machine, R ranks share its cores, so',
    'the whole decode runs on one rank with their threads unless row sharding is predicted faster or the whole decode',
    'does not fit); alternatives lists the ranked plans with class, predicted peak and predicted seconds, and blended',
    'tiles on a decoder with GroupNorm or attention add toneDrift (tiles may shift tone at their seams; the exact plan',
    'that fits instead, with its predictions). A budget nothing fits exits 2, naming the smallest predicted peak and its plan. A plan named with',
    "--window over --max-memory exits 2 naming the policy's plan that fits. --search --max-memory drops the grids",
    'predicted over the budget before the frontier is taken; each pick carries its prediction (JSON: budget, overBudget,',
    "picks.*.prediction). A tiled plan's 'diffusers-equivalent: no (...)' says why diffusers would tile it differently.",
    "--provider webgpu plans within WebGPU's buffer limits (128 MiB per tensor, or --max-tensor): without window options",
    "the policy's plan whose largest tensor fits; a window whose largest tensor does not fit exits 2 naming the tensor,",
    'its size and the limit.',
  ],
  async run(args, io) {
    const ranks = args.int('ranks', { min: 1, max: 4096 }) ?? 1;
    const provider = args.string('provider') ?? 'cpu';
    const device = args.string('device');
    if (device !== undefined && !/^\d+(,\d+)*$/.test(device))
      args.refuse('--device', device, 'a device id or a comma-separated list of them', `--device ${device}: expected 0 or 0,1`);
    const precision = args.choice('precision', PRECISIONS);
    const forceFp16 = args.flag('force-fp16');
    args.done();
    // Every adapter gets the same limits (Node cannot read an adapter's own): the ids are checked, not planned apart.
    if (device !== undefined && provider === 'webgpu') await checkAdapters(device.split(',').map(Number), '--device');
    const spec = readVaeSpec(args);
    // fp16 is a GPU decode's: the precision as a webgpu decode would resolve it (force_upcast honoured).
    const vae =
      precision === undefined && !forceFp16
        ? spec
        : {
            ...spec,
            precision: resolvePrecision(spec.config, { provider: 'webgpu', ...(precision ? { precision } : {}), forceFp16 }).precision,
          };
    const sample = readSampleShape(args, vae);
    if (args.flag('search')) {
      for (const name of ['window', 'overlap']) {
        if (args.has(name))
          args.refuse(
            `--${name}`,
            args.values[name],
            'absent with --search',
            `--${name} cannot be combined with --search (the search chooses windows)`,
          );
      }
      const budget = readBudgetOptions(args);
      args.done();
      // Only a budget the user gave filters: the memory model costs seconds per window at megapixel sizes.
      const result = hasMemoryModel(vae)
        ? searchWithinBudget(vae, sample, ranks, budget.explicit ? budget.budget : null)
        : searchPlans(vae, sample, ranks);
      io.stdout(args.flag('json') ? JSON.stringify(result) + '\n' : formatSearch(result));
      return 0;
    }
    const budget = readBudgetOptions(args, provider);
    const byPolicy =
      (budget.explicit || budget.limits !== null) &&
      !['window', 'overlap', 'frame-window', 'frame-overlap', 'no-frame-tiling'].some((name) => args.has(name));
    if (byPolicy && hasMemoryModel(vae)) {
      const result = chooseWithinBudget(vae, sample, budget.budget, { ranks, more: 12 });
      if (!result.choice) throw budgetRefusal(result);
      setTiling(vae, result.choice.tiling);
      // Only blended tiles are dealt to ranks; a row-sharded or whole choice has no tile grid to deal.
      const report = planReport(vae, sample, result.choice.plan.strategy === 'tile' ? ranks : 1);
      const drift = result.choice.class === 'blended' ? toneDrift(vae, sample, budget.budget, { ranks }) : null;
      const json = {
        ...report,
        memory: memoryJson(budget.budget, result.choice.prediction),
        choice: choiceJson(result.choice.plan, result.choice.reason, result.choice.time.seconds),
        alternatives: result.alternatives.map(alternativeJson),
        ...(drift ? { toneDrift: drift } : {}),
      };
      if (args.flag('json')) io.stdout(JSON.stringify(json) + '\n');
      else {
        io.stdout(
          `memory budget ${formatBytes(budget.budget.bytes)}${budget.limits ? `, at most ${formatBytes(budget.budget.maxTensorBytes!)} per tensor (${budget.limits.source})` : ''}: ${describePlan(result.choice.plan)} (${result.choice.reason}), predicted peak ${formatBytes(result.choice.prediction.peakBytes)}, predicted time ${formatSeconds(result.choice.time.seconds)}\n\n`,
        );
        if (drift) io.stdout(`${drift.message}\n\n`);
        if (result.choice.plan.strategy === 'shard')
          io.stdout(`row sharding: each of the ${ranks} ranks decodes a band of the latent's rows, exactly (no tile grid)\n`);
        else io.stdout(formatPlan(report));
        io.stdout('\nalternatives in policy order (predicted peak, largest tensor, predicted time):\n');
        for (const a of result.alternatives)
          io.stdout(
            `  ${a === result.choice ? '*' : a.fits ? ' ' : 'x'} ${describePlan(a.plan).padEnd(44)} ${formatBytes(a.prediction.peakBytes).padStart(10)}  ${formatBytes(a.prediction.maxTensorBytes).padStart(10)}  ${formatSeconds(a.time.seconds).padStart(7)}  ${a.reason}\n`,
          );
      }
      return 0;
    }
    applyTilingOptions(args, vae, sample);
    const report = planReport(vae, sample, ranks);
    const prediction = hasMemoryModel(vae) ? predictMemory(vae, planOfTiling(vae, 'tile', ranks), sample) : null;
    const plan = planOfTiling(vae, 'tile', ranks);
    // Refused before anything is printed: --json prints exactly one object.
    if (prediction && budget.limits && !fitsBudget(prediction, { bytes: Infinity, maxTensorBytes: budget.budget.maxTensorBytes! }))
      checkRequestFits(vae, sample, 'tile', budget.limits);
    if (prediction && budget.explicit && !fitsBudget(prediction, budget.budget))
      throw budgetRefusal(
        chooseWithinBudget(vae, sample, budget.budget, { ranks, more: Infinity }),
        namedAlternative(vae, plan, sample, prediction, budget.budget, 'the requested plan'),
      );
    const time = prediction ? predictTime(vae, plan, sample) : null;
    const json = {
      ...report,
      memory: memoryJson(budget.budget, prediction),
      choice: choiceJson(plan, 'as requested', time?.seconds ?? null),
    };
    io.stdout(
      args.flag('json')
        ? JSON.stringify(json) + '\n'
        : formatPlan(report) +
            (prediction
              ? `\npredicted peak ${formatBytes(prediction.peakBytes)} (largest tensor ${formatBytes(prediction.maxTensorBytes)}) of a ${formatBytes(budget.budget.bytes)} budget; predicted time ${formatSeconds(time!.seconds)}\n`
              : ''),
    );
    return 0;
  },
};
