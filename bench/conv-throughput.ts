// Throughput study for decoder graphs on onnxruntime CPU: how fast one large 3×3 convolution
// runs, what GroupNorm / SiLU / nearest-2× upsampling cost next to it in each ONNX spelling,
// and how close a resnet-block chain gets to the bare convolution's GFLOP/s under each graph
// optimisation level and session option. Its numbers decide how decoder graphs are built
// (results and decisions: bench/conv-throughput.md). Not a test: it measures, it does not assert.
//
//   npx tsx bench/conv-throughput.ts [--threads 2] [--repeat 7] [--section a,b,c,d,e,f]

import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { attr } from '../src/graph/attributes.js';
import { GraphBuilder, type Scope, type Value } from '../src/graph/builder.js';
import { GROUP_NORM_FORMS, type GroupNormForm } from '../src/graph/group-norm.js';
import { decodeModel, encodeModel, type ModelProto } from '../src/graph/onnx-proto.js';
import { seededTensor } from '../src/tensor.js';
import { createSession } from '../src/runtime/session.js';
import type { GraphOptimizationLevel, SessionOptions } from '../src/runtime/session-types.js';
import { cpuPressure, roundRobin, summarise, timedRun, waitForIdleCpus, type Timing } from './timing.js';

const { values: args } = parseArgs({
  options: {
    threads: { type: 'string', default: '2' },
    repeat: { type: 'string', default: '7' },
    section: { type: 'string', default: 'a,b,c,d,e,f' },
  },
});
const THREADS = Number(args.threads);
const REPEAT = Number(args.repeat);
const SECTIONS = new Set(args.section!.split(','));
const LEVELS: GraphOptimizationLevel[] = ['basic', 'extended', 'all'];

interface Shape {
  c: number;
  h: number;
  w: number;
}
const SHAPES: Record<string, Shape> = {
  '512@80x112': { c: 512, h: 80, w: 112 },
  '128@320x448': { c: 128, h: 320, w: 448 },
};
const convFlops = (s: Shape) => 2 * s.c * s.c * 9 * s.h * s.w;

let seed = 1;
function convLayer(scope: Scope, x: Value, c: number): Value {
  const w = scope.param('weight', seededTensor([c, c, 3, 3], seed++, 1 / Math.sqrt(9 * c)));
  const b = scope.param('bias', seededTensor([c], seed++, 0.1));
  return scope.conv(x, w, b, { pads: 1 });
}
function groupNormLayer(scope: Scope, x: Value, c: number, form: GroupNormForm): Value {
  const gamma = scope.param('weight', { dims: [c], data: new Float32Array(c).fill(1.1) });
  const beta = scope.param('bias', { dims: [c], data: new Float32Array(c).fill(0.05) });
  return scope.groupNorm(x, gamma, beta, { groups: 32, epsilon: 1e-6, form });
}

/**
 * A bench graph: x -> body -> mean over all elements. The scalar output keeps the timing about
 * the kernels: returning a large tensor would add a fresh JS buffer per run, and on this VM
 * first-touching fresh memory costs ~10 ms per MB (see the report), which would swamp them.
 */
function graph(name: string, shape: Shape, body: (g: GraphBuilder, x: Value) => Value): GraphBuilder {
  const g = new GraphBuilder(name);
  const x = g.input('x', [1, shape.c, shape.h, shape.w]);
  g.output('y', g.reduceMean(body(g, x), [0, 1, 2, 3], false));
  return g;
}

interface Variant {
  model: Uint8Array | GraphBuilder;
  options?: SessionOptions;
}

/**
 * Times several models on the same input, round-robin (A B C A B C …) so that load from other
 * processes on a shared machine hits every variant alike; one warm-up run each (the first run
 * also first-touches every arena buffer, which is slow on this VM).
 */
async function measure(shape: Shape, variants: Variant[]): Promise<Timing[]> {
  const sessions = [];
  for (const v of variants) {
    const bytes = v.model instanceof GraphBuilder ? v.model.toModelBytes() : v.model;
    sessions.push(await createSession(bytes, { intraOpThreads: THREADS, ...v.options }));
  }
  const x = seededTensor([1, shape.c, shape.h, shape.w], 99);
  for (const session of sessions) await session.run({ x });
  const pressureBefore = cpuPressure();
  const runs = await roundRobin(
    THREADS,
    REPEAT,
    sessions.map((session) => () => session.run({ x })),
  );
  for (const session of sessions) await session.dispose();
  console.log(
    `  [cpu pressure avg10 before ${pressureBefore}%, after ${cpuPressure()}%; clean runs ${runs.map((list) => list.filter((r) => r.clean).length).join(',')} of ${REPEAT}]`,
  );
  return runs.map(summarise);
}

const fmt = (v: number, d = 1) => v.toFixed(d);
function row(...cells: (string | number)[]): void {
  console.log(cells.map((c) => String(c).padEnd(26)).join(' '));
}

/** Op types (with domain) of the model onnxruntime actually runs at a level. */
async function optimisedOps(g: GraphBuilder, level: GraphOptimizationLevel): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-bench-'));
  const path = join(dir, 'optimised.onnx');
  const session = await createSession(g.toModelBytes(), { intraOpThreads: THREADS, graphOptimization: level, optimizedModelPath: path });
  await session.dispose();
  const model = decodeModel(readFileSync(path));
  rmSync(dir, { recursive: true });
  const counts: Record<string, number> = {};
  for (const n of model.graph?.node ?? []) {
    const key = (n.domain ? n.domain + '.' : '') + (n.op_type ?? '');
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/**
 * Milliseconds per op type in one run, from ORT's profiler: every node's kernel time is the
 * median over the clean runs (see timedRun) after a warm-up run, which first-touches the arena.
 */
async function profile(g: GraphBuilder, shape: Shape, options: SessionOptions): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'distvae-prof-'));
  const session = await createSession(g.toModelBytes(), { intraOpThreads: THREADS, ...options, profileFilePrefix: join(dir, 'p') });
  const x = seededTensor([1, shape.c, shape.h, shape.w], 99);
  const clean: boolean[] = [];
  for (let r = 0; r <= REPEAT; r++) {
    await waitForIdleCpus();
    clean.push((await timedRun(THREADS, () => session.run({ x }))).clean);
  }
  clean[0] = false; // the warm-up run first-touches the arena
  const useRun = clean.some((c) => c) ? clean : clean.map((_, r) => r > 0);
  session.endProfiling();
  await session.dispose();
  const file = readdirSync(dir).find((f) => f.endsWith('.json'))!;
  const events = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
    cat: string;
    name: string;
    dur: number;
    args?: { op_name?: string };
  }[];
  rmSync(dir, { recursive: true });
  const perNode = new Map<string, { op: string; ms: number[] }>();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const entry = perNode.get(e.name) ?? { op: e.args?.op_name ?? '?', ms: [] };
    entry.ms.push(e.dur / 1000);
    perNode.set(e.name, entry);
  }
  const perOp: Record<string, number> = {};
  for (const { op, ms } of perNode.values()) {
    const runs = ms.filter((_, r) => useRun[r]).sort((a, b) => a - b);
    perOp[op] = (perOp[op] ?? 0) + runs[Math.floor(runs.length / 2)]!;
  }
  return perOp;
}

function withContribDomain(g: GraphBuilder, opType: string): Uint8Array {
  const model: ModelProto = g.toModel();
  model.opset_import!.push({ domain: 'com.microsoft', version: 1 });
  for (const n of model.graph!.node!) if (n.op_type === opType) n.domain = 'com.microsoft';
  return encodeModel(model);
}

const resnetChain = (s: Shape, form: GroupNormForm) =>
  graph(`resnet_${form}`, s, (g, x) => {
    const block = g.scope('resnet');
    let h = groupNormLayer(block.scope('norm1'), x, s.c, form);
    h = block.silu(h);
    h = convLayer(block.scope('conv1'), h, s.c);
    h = groupNormLayer(block.scope('norm2'), h, s.c, form);
    h = block.silu(h);
    h = convLayer(block.scope('conv2'), h, s.c);
    return block.add(x, h);
  });

const bareConv = (s: Shape) => graph('conv', s, (g, x) => convLayer(g.scope('conv'), x, s.c));

const ms = (t: Timing) => `${fmt(t.medianMs)} / ${fmt(t.minMs)} ms${t.cleanRuns === 0 ? ' (!)' : ''}`;
/** Share of the bare conv's speed, by medians and by minima. */
const relative = (t: Timing, conv: Timing, factor = 1) =>
  `${fmt((100 * t.medianMs) / (factor * conv.medianMs), 2)} % / ${fmt((100 * t.minMs) / (factor * conv.minMs), 2)} %`;

console.log(
  `onnxruntime CPU, intra-op threads ${THREADS}, repeat ${REPEAT} round-robin; times are median / min over clean runs (CPU time ≥ 85% of ${THREADS} cores; '(!)' = none was clean, all runs shown)`,
);

if (SECTIONS.has('a')) {
  console.log('\n(a) single 3x3 conv, Cin = Cout, pad 1; GFLOP = 2*Cin*Cout*9*H*W');
  for (const [label, s] of Object.entries(SHAPES)) {
    const timings = await measure(
      s,
      LEVELS.map((level) => ({ model: bareConv(s), options: { graphOptimization: level } })),
    );
    timings.forEach((t, i) =>
      row(
        `conv ${label}`,
        `level ${LEVELS[i]}`,
        ms(t),
        `${fmt(convFlops(s) / t.medianMs / 1e6)} / ${fmt(convFlops(s) / t.minMs / 1e6)} GFLOP/s`,
      ),
    );
    const [reduceOnly] = await measure(s, [{ model: graph('reduce_only', s, (_g, x) => x) }]);
    row(`mean-only graph ${label}`, 'level all', ms(reduceOnly!), '(floor included in every row)');
  }
  console.log('ops at all:', JSON.stringify(await optimisedOps(bareConv(SHAPES['512@80x112']!), 'all')));
}

const conv = (s: Shape): Variant => ({ model: bareConv(s), options: { graphOptimization: 'all' } });

if (SECTIONS.has('b')) {
  console.log('\n(b) GroupNorm(32) forms; time as a share of the same-size conv (level all), median / min');
  for (const [label, s] of Object.entries(SHAPES)) {
    const cases = GROUP_NORM_FORMS.flatMap((form) => (['basic', 'all'] as const).map((level) => ({ form, level })));
    const [base, ...timings] = await measure(s, [
      conv(s),
      ...cases.map(({ form, level }) => ({
        model: graph(`gn_${form}`, s, (g, x) => groupNormLayer(g.scope('norm'), x, s.c, form)),
        options: { graphOptimization: level },
      })),
    ]);
    timings.forEach((t, i) => row(`GN ${cases[i]!.form} ${label}`, `level ${cases[i]!.level}`, ms(t), relative(t, base!)));
  }
}

if (SECTIONS.has('c')) {
  console.log('\n(c) SiLU forms; time as a share of the same-size conv');
  for (const [label, s] of Object.entries(SHAPES)) {
    const quick = graph('quickgelu', s, (g, x) => g.op('QuickGelu', [x], [attr.float('alpha', 1)]));
    const cases: [string, Variant][] = [
      ...LEVELS.map((level): [string, Variant] => [
        `Sigmoid+Mul, level ${level}`,
        { model: graph('silu', s, (g, x) => g.silu(x)), options: { graphOptimization: level } },
      ]),
      ['ms.QuickGelu(alpha=1), all', { model: withContribDomain(quick, 'QuickGelu'), options: { graphOptimization: 'all' } }],
      ['Sigmoid alone, all', { model: graph('sigmoid', s, (g, x) => g.sigmoid(x)), options: { graphOptimization: 'all' } }],
    ];
    const [base, ...timings] = await measure(s, [conv(s), ...cases.map(([, v]) => v)]);
    timings.forEach((t, i) => row(`${label}`, cases[i]![0], ms(t), relative(t, base!)));
  }
  for (const level of ['basic', 'extended'] as const) {
    console.log(
      `SiLU ops at ${level}:`,
      JSON.stringify(
        await optimisedOps(
          graph('silu', SHAPES['512@80x112']!, (g, x) => g.silu(x)),
          level,
        ),
      ),
    );
  }
}

if (SECTIONS.has('d')) {
  console.log('\n(d) nearest 2x upsample; time as a share of the conv at the input size');
  for (const [label, s] of Object.entries(SHAPES)) {
    const cases: [string, Variant][] = [
      ['Resize nearest', { model: graph('resize', s, (g, x) => g.resizeNearest(x, [1, 1, 2, 2])), options: { graphOptimization: 'all' } }],
      [
        'Concat x4 + DepthToSpace',
        { model: graph('d2s', s, (g, x) => g.depthToSpace(g.concat([x, x, x, x], 1), 2, 'DCR')), options: { graphOptimization: 'all' } },
      ],
      [
        'Resize + conv (4x FLOPs)',
        {
          model: graph('up_conv', s, (g, x) => convLayer(g.scope('conv'), g.resizeNearest(x, [1, 1, 2, 2]), s.c)),
          options: { graphOptimization: 'all' },
        },
      ],
    ];
    const [base, ...timings] = await measure(s, [conv(s), ...cases.map(([, v]) => v)]);
    timings.forEach((t, i) => row(label, cases[i]![0], ms(t), relative(t, base!, i === 2 ? 4 : 1)));
  }
}

if (SECTIONS.has('e')) {
  console.log(
    '\n(e) resnet block GN-SiLU-conv-GN-SiLU-conv-add: bare-conv time x2 as a share of the chain time (= chain GFLOP/s / conv GFLOP/s)',
  );
  for (const [label, s] of Object.entries(SHAPES)) {
    const cases = GROUP_NORM_FORMS.flatMap((form) => LEVELS.map((level) => ({ form, level })));
    const [base, ...timings] = await measure(s, [
      conv(s),
      ...cases.map(({ form, level }) => ({ model: resnetChain(s, form), options: { graphOptimization: level } })),
    ]);
    row(
      `conv ${label}`,
      'level all',
      ms(base!),
      `${fmt(convFlops(s) / base!.medianMs / 1e6)} / ${fmt(convFlops(s) / base!.minMs / 1e6)} GFLOP/s`,
    );
    timings.forEach((t, i) =>
      row(
        `chain ${cases[i]!.form} ${label}`,
        `level ${cases[i]!.level}`,
        ms(t),
        `${fmt((2 * convFlops(s)) / t.medianMs / 1e6)} GFLOP/s, ${fmt((100 * 2 * base!.medianMs) / t.medianMs)} % / ${fmt((100 * 2 * base!.minMs) / t.minMs)} %`,
      ),
    );
  }
  for (const form of GROUP_NORM_FORMS) {
    console.log(`chain ops, ${form}, level all:`, JSON.stringify(await optimisedOps(resnetChain(SHAPES['512@80x112']!, form), 'all')));
  }
}

if (SECTIONS.has('f')) {
  console.log('\n(f) session options on the resnet chain (level all), share of bare-conv speed; per-op profile');
  for (const [label, s] of Object.entries(SHAPES)) {
    const form: GroupNormForm = 'instance-norm';
    const cases: [string, SessionOptions][] = [
      ['defaults', {}],
      ['enableCpuMemArena=false', { enableCpuMemArena: false }],
      ['allowSpinning=false', { allowSpinning: false }],
      ['executionMode=parallel', { executionMode: 'parallel', interOpThreads: 2 }],
    ];
    const [base, ...timings] = await measure(s, [
      conv(s),
      ...cases.map(([, options]) => ({ model: resnetChain(s, form), options: { graphOptimization: 'all' as const, ...options } })),
    ]);
    timings.forEach((t, i) =>
      row(
        `chain ${form} ${label}`,
        cases[i]![0],
        ms(t),
        `${fmt((100 * 2 * base!.medianMs) / t.medianMs)} % / ${fmt((100 * 2 * base!.minMs) / t.minMs)} %`,
      ),
    );
    for (const f of GROUP_NORM_FORMS) {
      const perOp = await profile(resnetChain(s, f), s, { graphOptimization: 'all' });
      const total = Object.values(perOp).reduce((a, b) => a + b, 0);
      console.log(
        `profile ${f} ${label} (ms per op type, total ${fmt(total)}):`,
        Object.entries(perOp)
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${k} ${fmt(v)}`)
          .join(', '),
      );
    }
  }
}
