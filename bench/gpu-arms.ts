// The variant arms of issue 26 item 2: the SD decoder graph (synthetic weights, whole) at one size
// on onnxruntime's WebGPU provider, once per setting that could close a gap to PyTorch, each arm in
// its own child process under its own time limit, with onnxruntime's profiler on (per op type:
// convolution, GroupNorm's ops, resize, layout transposes), the report rewritten as each arm ends.
//
// The knobs onnxruntime-node 1.30's binding takes for WebGPU are the arms: preferredLayout
// NCHW / NHWC and storageBufferCacheMode bucket (its default) / simple / lazyRelease / disabled.
// Not arms, and recorded as such in the report: graph capture (the binding takes no
// enableGraphCapture, and a captured graph needs device-resident inputs and outputs, which Node's
// tensors are not) and GroupNorm fused or decomposed (the graph builder spells each GroupNorm in
// one form per call, graph/builder.ts; no graph-wide switch exists yet).
//
//   npx tsx bench/gpu-arms.ts [--size 1024] [--config sd|sd-small] [--arms base,nhwc,...] [--repeat 3]
//                             [--arm-timeout 300] [--out bench/results/gpu-arms-NAME] [--no-profile]

import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeRun } from '../src/bench/machine.js';
import { buildKlDecoderGraph } from '../src/families/autoencoder-kl/graph.js';
import { getFamily, runtimeOf } from '../src/families/registry.js';
import { createSession } from '../src/runtime/session.js';
import type { WebGpuSettings } from '../src/runtime/session-types.js';
import { seededTensor } from '../src/tensor.js';
import { syntheticWeights } from '../src/weights/synthetic.js';
import { SD_CONFIG, SD_SMALL_CONFIG, deviceDescription, runLimited, uptime } from './gpu.js';

/** One arm: the provider settings it changes from onnxruntime's defaults. */
export const ARMS: Readonly<Record<string, WebGpuSettings>> = {
  base: {},
  nhwc: { preferredLayout: 'NHWC' },
  'cache-simple': { storageBufferCacheMode: 'simple' },
  'cache-lazy': { storageBufferCacheMode: 'lazyRelease' },
  'cache-disabled': { storageBufferCacheMode: 'disabled' },
  'nhwc-simple': { preferredLayout: 'NHWC', storageBufferCacheMode: 'simple' },
};

const NOT_ARMS = {
  graphCapture:
    "onnxruntime-node 1.30's binding takes no enableGraphCapture for WebGPU, and a captured graph needs device-resident inputs and outputs, which Node's tensors are not",
  groupNorm:
    'the graph builder spells each GroupNorm in one form per call (graph/builder.ts, default instance-norm); no graph-wide fused/decomposed switch exists yet',
};

interface ArmSpec {
  arm: string;
  settings: WebGpuSettings;
  config: 'sd' | 'sd-small';
  size: number;
  repeat: number;
  profile: boolean;
}

interface ArmResult {
  arm: string;
  settings: WebGpuSettings;
  status: 'ok' | 'failed' | 'timed-out';
  note?: string;
  limitSeconds: number;
  wallSeconds: number;
  /** Session creation (graph build excluded), the first run (shader compilation), the median of the warm runs. */
  createSeconds: number | null;
  firstRunSeconds: number | null;
  seconds: number | null;
  runSeconds: number[];
  /** Milliseconds per op type over one profiled run (dispatch-side times as onnxruntime records them), largest first. */
  profile: [string, number][] | null;
}

/** The child's side: build the graph, open the session with the arm's settings, run. */
async function child(spec: ArmSpec): Promise<void> {
  const family = getFamily('autoencoder-kl');
  const config = family.resolveConfig(spec.config === 'sd' ? SD_CONFIG : SD_SMALL_CONFIG);
  const weights = syntheticWeights(runtimeOf(family).decoderParams(config), 0);
  const model = buildKlDecoderGraph(config, weights).toModelBytes();
  const feeds = { latent: seededTensor([1, 4, spec.size / 8, spec.size / 8], 1) };
  const dir = mkdtempSync(join(tmpdir(), 'distvae-arm-'));
  const t0 = performance.now();
  const session = await createSession(model, {
    provider: { name: 'webgpu', ...spec.settings },
    ...(spec.profile ? { profileFilePrefix: join(dir, 'p') } : {}),
  });
  const createSeconds = (performance.now() - t0) / 1000;
  const times: number[] = [];
  for (let i = 0; i <= spec.repeat; i++) {
    const t = performance.now();
    await session.run(feeds);
    times.push((performance.now() - t) / 1000);
  }
  let profile: [string, number][] | null = null;
  if (spec.profile) {
    session.endProfiling();
    profile = profileByOp(dir, spec.repeat + 1);
  }
  await session.dispose();
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(JSON.stringify({ createSeconds, times, profile }) + '\n');
}

/** Milliseconds per op type in one run: the profiler's kernel events over all runs, divided by the runs. */
function profileByOp(dir: string, runs: number): [string, number][] | null {
  const file = readdirSync(dir).find((f) => f.endsWith('.json'));
  if (!file) return null;
  const events = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
    cat: string;
    name: string;
    dur: number;
    args?: { op_name?: string };
  }[];
  const perOp: Record<string, number> = {};
  for (const e of events.filter((x) => x.cat === 'Node' && x.name.endsWith('_kernel_time'))) {
    const op = e.args?.op_name ?? '?';
    perOp[op] = (perOp[op] ?? 0) + e.dur / 1000 / runs;
  }
  return Object.entries(perOp).sort((a, b) => b[1] - a[1]);
}

const median = (xs: number[]): number | null => (xs.length === 0 ? null : [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!);

function markdown(report: {
  name: string;
  ran: ReturnType<typeof describeRun>;
  device: string;
  command: string;
  uptimeBefore: string;
  uptimeAfter: string | null;
  arms: ArmResult[];
  notArms: typeof NOT_ARMS;
}): string {
  const base = report.arms.find((a) => a.arm === 'base')?.seconds ?? null;
  return [
    `# bench/gpu-arms.ts — ${report.name}`,
    '',
    `Machine: ${report.ran.machine}, ${report.ran.cpu}; node ${report.ran.node}, onnxruntime ${report.ran.onnxruntime}; commit ${report.ran.commit ?? 'unknown'}.`,
    `Device: ${report.device}.`,
    `Command: \`${report.command}\``,
    `uptime before: ${report.uptimeBefore}`,
    `uptime after: ${report.uptimeAfter ?? '(running)'}`,
    '',
    '| arm | settings | status | create s | first run s | warm s (median) | vs base | top ops (ms per run) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...report.arms.map(
      (a) =>
        `| ${a.arm} | ${JSON.stringify(a.settings).replace(/\|/g, '\\|')} | ${a.status}${a.note ? `: ${a.note.replace(/\|/g, '\\|').slice(0, 160)}` : ''} | ${a.createSeconds?.toFixed(2) ?? '—'} | ${a.firstRunSeconds?.toFixed(2) ?? '—'} | ${a.seconds?.toFixed(3) ?? '—'} | ${a.seconds !== null && base !== null ? (a.seconds / base).toFixed(2) : '—'} | ${
          a.profile
            ?.slice(0, 5)
            .map(([op, ms]) => `${op} ${ms.toFixed(1)}`)
            .join(', ') ?? '—'
        } |`,
    ),
    '',
    `Not arms: graph capture — ${NOT_ARMS.graphCapture}; GroupNorm fused/decomposed — ${NOT_ARMS.groupNorm}.`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const here = fileURLToPath(import.meta.url);
  const root = dirname(dirname(here));
  const { values: v } = parseArgs({
    options: {
      child: { type: 'string' },
      size: { type: 'string', default: '1024' },
      config: { type: 'string', default: 'sd' },
      arms: { type: 'string', default: Object.keys(ARMS).join(',') },
      repeat: { type: 'string', default: '3' },
      'arm-timeout': { type: 'string', default: '300' },
      'no-profile': { type: 'boolean', default: false },
      out: { type: 'string' },
      name: { type: 'string', default: 'gpu' },
      commit: { type: 'string' },
      device: { type: 'string' },
    },
  });
  if (v.child) return child(JSON.parse(v.child) as ArmSpec);
  const limitS = Number(v['arm-timeout']);
  const out = resolve(v.out ?? join(root, 'bench', 'results', `gpu-arms-${v.name}`));
  mkdirSync(dirname(out), { recursive: true });
  const ran = describeRun(process.argv.slice(2), null, root);
  if (v.commit) ran.commit = v.commit;
  const report = {
    name: v.name!,
    command: `bench/gpu-arms.ts ${process.argv.slice(2).join(' ')}`,
    ran,
    device: deviceDescription('webgpu', v.device ?? null),
    uptimeBefore: uptime(),
    uptimeAfter: null as string | null,
    size: Number(v.size),
    config: v.config,
    arms: [] as ArmResult[],
    notArms: NOT_ARMS,
  };
  for (const arm of v.arms!.split(',')) {
    const settings = ARMS[arm];
    if (!settings) throw new Error(`--arms ${arm}: one of ${Object.keys(ARMS).join(', ')}`);
    const spec: ArmSpec = {
      arm,
      settings,
      config: v.config as ArmSpec['config'],
      size: Number(v.size),
      repeat: Number(v.repeat),
      profile: !v['no-profile'],
    };
    // Under tsx in a checkout; the compiled file on the GPU machine runs itself.
    const self = here.endsWith('.ts') ? [process.execPath, '--import', 'tsx', here] : [process.execPath, here];
    const end = await runLimited([...self, '--child', JSON.stringify(spec)], limitS);
    const r: ArmResult = {
      arm,
      settings,
      status: 'failed',
      limitSeconds: limitS,
      wallSeconds: end.wallSeconds,
      createSeconds: null,
      firstRunSeconds: null,
      seconds: null,
      runSeconds: [],
      profile: null,
    };
    const line = end.stdout.split('\n').find((l) => l.startsWith('{'));
    if (end.timedOut) Object.assign(r, { status: 'timed-out', note: `killed at the arm's limit of ${limitS} s` });
    else if (end.code !== 0 || !line) r.note = `exit ${end.code}: ${end.stderr.trim().split('\n').slice(-1)[0] ?? ''}`;
    else {
      const got = JSON.parse(line) as { createSeconds: number; times: number[]; profile: [string, number][] | null };
      Object.assign(r, {
        status: 'ok',
        createSeconds: got.createSeconds,
        firstRunSeconds: got.times[0] ?? null,
        runSeconds: got.times.slice(1),
        seconds: median(got.times.slice(1)),
        profile: got.profile,
      });
    }
    report.arms.push(r);
    report.uptimeAfter = uptime();
    writeFileSync(`${out}.json`, JSON.stringify(report, null, 2) + '\n');
    writeFileSync(`${out}.md`, markdown(report));
    console.log(`arm ${arm}: ${r.status}${r.seconds !== null ? ` ${r.seconds.toFixed(3)} s` : ''}${r.note ? ` — ${r.note}` : ''}`);
  }
}

if (/[/\\]gpu-arms\.(ts|mjs)$/.test(process.argv[1] ?? '')) await main();
