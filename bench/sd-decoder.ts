// How fast the SD 1.x decoder graph runs against the machine's own conv speed: the full-size
// architecture (block_out [128, 256, 512, 512], 2 layers, 4 latent channels, synthetic weights)
// decodes a 1×4×40×56 latent (320×448 px); its nominal conv FLOPs (2·Cin·Cout·k²·H·W per conv,
// the upsamplers counted as 3×3 convs at the upsampled size whatever the graph does) over the
// median time give the effective GFLOP/s, compared with a single 512-channel 3×3 conv at 80×112
// timed in the same round-robin. Graph variants are timed side by side. Also a study of the
// upsampler spellings at the decoder's three upsampler sizes. Not a test: it measures.
//
//   npx tsx bench/sd-decoder.ts [--threads 2] [--repeat 5] [--section decoder,upsampler]
//                               [--variants resize-conv,polyphase] [--profile]

import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { GraphBuilder, type Value } from '../src/graph/builder.js';
import { seededTensor } from '../src/tensor.js';
import { Module, UPSAMPLER_FORMS, WeightTable, upsampler2d } from '../src/families/blocks/blocks.js';
import { buildKlDecoderGraph, klDecoderParams, type KlGraphOptions } from '../src/families/autoencoder-kl/graph.js';
import { getFamily } from '../src/families/registry.js';
import { createSession } from '../src/runtime/session.js';
import type { Session } from '../src/runtime/session-types.js';
import type { Tensor } from '../src/tensor.js';
import { syntheticWeights, type ParamSpec } from '../src/weights/synthetic.js';
import { cpuPressure, roundRobin, summarise, type Run, type Timing } from './timing.js';

const { values: args } = parseArgs({
  options: {
    threads: { type: 'string', default: '2' },
    repeat: { type: 'string', default: '5' },
    section: { type: 'string', default: 'decoder' },
    variants: { type: 'string', default: 'resize-conv,polyphase' },
    profile: { type: 'boolean', default: false },
    'no-spinning': { type: 'boolean', default: false },
  },
});
const THREADS = Number(args.threads);
/** Spinning off makes CPU time ≈ work, a usable measure when other jobs hold the cores. */
const SESSION = { intraOpThreads: THREADS, allowSpinning: !args['no-spinning'] };
const REPEAT = Number(args.repeat);
const SECTIONS = new Set(args.section!.split(','));
const LATENT = [1, 4, 40, 56];
/** Single-conv runs per round: one is short next to a decode, so take several and their median. */
const CONV_RUNS_PER_ROUND = 5;

const fmt = (v: number, d = 1) => v.toFixed(d);

/** Variants by name: graph options of the decoder. */
const VARIANTS: Record<string, KlGraphOptions> = {
  'resize-conv': { upsampler: 'resize-conv' },
  polyphase: { upsampler: 'polyphase' },
};

/**
 * Nominal conv FLOPs of the decoder for a latent h × w: each conv's resolution follows from its
 * key (post_quant_conv, conv_in and the mid block at the latent size; up block i at 2^i times it;
 * its upsampler conv and conv_out at the next size).
 */
export function decoderConvFlops(specs: readonly ParamSpec[], h: number, w: number): number {
  let flops = 0;
  for (const s of specs) {
    if (s.init !== 'conv') continue;
    const [cout, cin, kh, kw] = s.dims as [number, number, number, number];
    const up = /^decoder\.up_blocks\.(\d+)\.(resnets|upsamplers)\./.exec(s.name);
    const levels = specs.filter((p) => /upsamplers\.0\.conv\.weight$/.test(p.name)).length;
    const scale = up ? 2 ** (Number(up[1]) + (up[2] === 'upsamplers' ? 1 : 0)) : s.name === 'decoder.conv_out.weight' ? 2 ** levels : 1;
    flops += 2 * cout * cin * kh * kw * h * scale * w * scale;
  }
  return flops;
}

async function timeSessions(sessions: { session: Session; feeds: Record<string, Tensor>; runs: number }[]): Promise<Timing[]> {
  for (const s of sessions) await s.session.run(s.feeds);
  const pressureBefore = cpuPressure();
  const rounds = await roundRobin(
    THREADS,
    REPEAT,
    sessions.map((s) => async () => {
      for (let k = 0; k < s.runs; k++) await s.session.run(s.feeds);
    }),
  );
  console.log(
    `  [cpu pressure avg10 before ${pressureBefore}%, after ${cpuPressure()}%; clean rounds ${rounds.map((list) => list.filter((r) => r.clean).length).join(',')} of ${REPEAT}]`,
  );
  return rounds.map((list, i) =>
    summarise(list.map((r): Run => ({ ms: r.ms / sessions[i]!.runs, cpuMs: r.cpuMs / sessions[i]!.runs, clean: r.clean }))),
  );
}

function singleConv(c: number): GraphBuilder {
  const g = new GraphBuilder('conv');
  const x = g.input('x', [1, c, 'h', 'w']);
  const conv = g.scope('conv');
  const y = conv.conv(
    x,
    conv.param('weight', seededTensor([c, c, 3, 3], 1, 1 / Math.sqrt(9 * c))),
    conv.param('bias', seededTensor([c], 2, 0.1)),
    { pads: 1 },
  );
  g.output('y', g.reduceMean(y, [0, 1, 2, 3], false));
  return g;
}

/** Milliseconds per op type in one run, from ORT's profiler (second run: the first touches the arena). */
async function profileOps(model: Uint8Array, feeds: Record<string, Tensor>): Promise<[string, number][]> {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-prof-'));
  const session = await createSession(model, { ...SESSION, profileFilePrefix: join(dir, 'p') });
  await session.run(feeds);
  await session.run(feeds);
  session.endProfiling();
  await session.dispose();
  const events = JSON.parse(
    readFileSync(
      join(
        dir,
        readdirSync(dir).find((f) => f.endsWith('.json'))!,
      ),
      'utf8',
    ),
  ) as { cat: string; name: string; dur: number; args?: { op_name?: string } }[];
  rmSync(dir, { recursive: true });
  const kernels = events.filter((e) => e.cat === 'Node' && e.name.endsWith('_kernel_time'));
  const perOp: Record<string, number> = {};
  for (const e of kernels.slice(kernels.length / 2)) perOp[e.args?.op_name ?? '?'] = (perOp[e.args?.op_name ?? '?'] ?? 0) + e.dur / 1000;
  return Object.entries(perOp).sort((a, b) => b[1] - a[1]);
}

console.log(
  `onnxruntime CPU, intra-op threads ${THREADS}, ${REPEAT} round-robin rounds; median / min over clean rounds (CPU time ≥ 85 % of ${THREADS} cores; '(!)' = none clean)`,
);

if (SECTIONS.has('decoder')) {
  const config = getFamily('autoencoder-kl').resolveConfig({
    block_out_channels: [128, 256, 512, 512],
    layers_per_block: 2,
    latent_channels: 4,
  });
  const specs = klDecoderParams(config);
  const weights = syntheticWeights(specs, 0);
  const flops = decoderConvFlops(specs, LATENT[2]!, LATENT[3]!);
  const convFlops = 2 * 512 * 512 * 9 * 80 * 112;
  console.log(
    `\nSD 1.x decoder on latent ${LATENT.join('×')}: ${fmt(flops / 1e12, 3)} TFLOP nominal conv work; reference conv 512→512 3×3 at 80×112: ${fmt(convFlops / 1e9)} GFLOP`,
  );
  const names = args.variants!.split(',');
  const latent = { latent: seededTensor(LATENT, 7) };
  const models = names.map((name) => {
    const options = VARIANTS[name];
    if (!options) {
      console.error(`unknown variant ${name}; known: ${Object.keys(VARIANTS).join(', ')}`);
      process.exit(2);
    }
    return buildKlDecoderGraph(config, weights, options).toModelBytes();
  });
  const sessions = [
    {
      session: await createSession(singleConv(512).toModelBytes(), SESSION),
      feeds: { x: seededTensor([1, 512, 80, 112], 3) },
      runs: CONV_RUNS_PER_ROUND,
    },
    ...(await Promise.all(models.map(async (m) => ({ session: await createSession(m, SESSION), feeds: latent, runs: 1 })))),
  ];
  const [conv, ...decoders] = await timeSessions(sessions);
  const convRate = convFlops / conv!.medianMs / 1e6;
  const convRateMin = convFlops / conv!.minMs / 1e6;
  const convCpuRate = convFlops / conv!.medianCpuMs / 1e6;
  console.log(
    `  single conv: ${fmt(conv!.medianMs)} / ${fmt(conv!.minMs)} ms = ${fmt(convRate)} / ${fmt(convRateMin)} GFLOP/s; per CPU-second ${fmt(convCpuRate)} GFLOP/s`,
  );
  decoders.forEach((t, i) => {
    const rate = flops / t.medianMs / 1e6;
    const rateMin = flops / t.minMs / 1e6;
    console.log(
      `  decoder ${names[i]!.padEnd(16)} ${fmt(t.medianMs / 1000, 2)} / ${fmt(t.minMs / 1000, 2)} s${t.cleanRuns === 0 ? ' (!)' : ''} = ${fmt(rate)} / ${fmt(rateMin)} GFLOP/s effective = ${fmt(rate / convRate, 3)} / ${fmt(rateMin / convRateMin, 3)} × the conv; per CPU-second ${fmt(flops / t.medianCpuMs / 1e6)} GFLOP/s = ${fmt(flops / t.medianCpuMs / 1e6 / convCpuRate, 3)} × the conv`,
    );
  });
  for (const s of sessions) await s.session.dispose();
  if (args.profile) {
    for (const [i, m] of models.entries()) {
      const ops = await profileOps(m, latent);
      const total = ops.reduce((a, [, v]) => a + v, 0);
      console.log(
        `  profile ${names[i]} (kernel ms, total ${fmt(total)}): ${ops
          .slice(0, 12)
          .map(([k, v]) => `${k} ${fmt(v)}`)
          .join(', ')}`,
      );
    }
  }
}

if (SECTIONS.has('upsampler')) {
  console.log('\nUpsample2D spellings (input → reduce mean), time relative to resize-conv; nominal FLOPs = the 3×3 conv at 2× size');
  const forms = UPSAMPLER_FORMS;
  for (const [c, h, w] of [
    [512, 40, 56],
    [512, 80, 112],
    [256, 160, 224],
  ] as const) {
    const specs: ParamSpec[] = [
      { name: 'up.conv.weight', dims: [c, c, 3, 3], init: 'conv' },
      { name: 'up.conv.bias', dims: [c], init: 'bias' },
    ];
    const weights = syntheticWeights(specs, 0);
    const models = forms.map((form) => {
      const g = new GraphBuilder(`up_${form}`);
      const x: Value = g.input('x', [1, c, h, w]);
      const table = new WeightTable(weights);
      g.output('y', g.reduceMean(upsampler2d(new Module(g, table).child('up'), x, c, form), [0, 1, 2, 3], false));
      return g.toModelBytes();
    });
    const feeds = { x: seededTensor([1, c, h, w], 5) };
    const sessions = await Promise.all(models.map(async (m) => ({ session: await createSession(m, SESSION), feeds, runs: 2 })));
    const timings = await timeSessions(sessions);
    const nominal = 2 * c * c * 9 * 4 * h * w;
    timings.forEach((t, i) => {
      console.log(
        `  ${c}@${h}x${w} ${forms[i]!.padEnd(16)} ${fmt(t.medianMs)} / ${fmt(t.minMs)} ms${t.cleanRuns === 0 ? ' (!)' : ''}  ${fmt(nominal / t.medianMs / 1e6)} GFLOP/s nominal  ${fmt(t.medianMs / timings[0]!.medianMs, 3)} × resize-conv (CPU time: ${fmt(t.medianCpuMs / timings[0]!.medianCpuMs, 3)} ×)`,
      );
    });
    for (const s of sessions) await s.session.dispose();
  }
}
