// The locality report for people and for JSON: every step with its halo in latent rows and in
// rows of its inputs and outputs, the nonlocal ops, and the two verdicts (halo-exact tiling with
// its halo, or refused naming the ops; row sharding possible or not).

import { formatRatio, formatScale, type LocalityReport, type StageLocality } from '../entries/graph.js';
import { type CommCounters } from '../entries/ranks.js';

export interface LocalityJson {
  graph: string;
  input: string;
  output: string;
  outputScale: string;
  steps: (
    | {
        kind: 'stage';
        index: number;
        nodes: number;
        first: string;
        last: string;
        haloLatentRows: string | null;
        haloLatentCols: string | null;
        inputs: { name: string; scale: string; haloRows: number }[];
        outputs: { name: string; scale: string; haloRows: number; depthRows: number }[];
        resampling: { node: string; op: string; factor: string }[];
        findings: LocalityReport['nonlocal'];
      }
    | { kind: 'group-norm' | 'attention'; name: string; description: string; inputs: string[]; output: string; nodes: number }
  )[];
  nonlocal: LocalityReport['nonlocal'];
  exactTiling: { possible: true; halo: { rows: number; cols: number } } | { possible: false; reasons: string[] };
  sharding: { possible: boolean; reasons: string[]; groupNorms: number; attentions: number };
  collectives?: { ranks: number; latent: { height: number; width: number }; perRank: CommCounters[] };
}

function stageJson(s: StageLocality) {
  return {
    kind: 'stage' as const,
    index: s.index,
    nodes: s.nodes.count,
    first: s.nodes.first,
    last: s.nodes.last,
    haloLatentRows: s.halo ? formatRatio(s.halo.rows) : null,
    haloLatentCols: s.halo ? formatRatio(s.halo.cols) : null,
    inputs: s.inputs.map((v) => ({ name: v.name, scale: formatScale(v.scale), haloRows: v.haloRows })),
    outputs: s.outputs.map((v) => ({
      name: v.name,
      scale: formatScale(v.scale),
      haloRows: v.haloRows,
      depthRows: Math.max(v.depth.top, v.depth.bottom),
    })),
    resampling: s.growth.filter((g) => g.resample).map((g) => ({ node: g.node, op: g.op, factor: formatScale(g.resample!) })),
    findings: s.findings.map((f) => ({ kind: f.kind, op: f.op, node: f.node, reason: f.reason })),
  };
}

export function localityJson(report: LocalityReport): LocalityJson {
  const stages = new Map(report.stages.map((s) => [s.index, s]));
  const regions = new Map(report.regions.map((r) => [r.name, r]));
  return {
    graph: report.graph,
    input: report.input,
    output: report.output,
    outputScale: formatScale(report.outputScale),
    steps: report.order.map((o) => {
      if (o.kind === 'stage') return stageJson(stages.get(o.index)!);
      const r = regions.get(o.name)!;
      return { kind: r.kind, name: r.name, description: r.description, inputs: r.inputs, output: r.output, nodes: r.nodes.length };
    }),
    nonlocal: report.nonlocal,
    exactTiling: report.exactTiling.possible ? report.exactTiling : { possible: false, reasons: report.exactTiling.blockers },
    sharding: {
      possible: report.sharding.possible,
      reasons: report.sharding.blockers,
      groupNorms: report.regions.filter((r) => r.kind === 'group-norm').length,
      attentions: report.regions.filter((r) => r.kind === 'attention').length,
    },
  };
}

const KINDS = ['send', 'allReduce', 'allGather'] as const;

/** The collectives row sharding uses, as `kind calls / bytes` (what a rank or a run sent). */
export function formatCollectives(c: CommCounters): string {
  return KINDS.map((k) => `${k} ${c[k].calls} / ${c[k].bytes}`).join(', ');
}

export function formatLocality(j: LocalityJson): string {
  const lines = [`decoder graph ${j.graph}: ${j.input} -> ${j.output} (${j.outputScale})`, ''];
  lines.push('step                    halo (latent rows)  inputs (scale+halo rows)            outputs (scale, wrong rows at a cut)');
  for (const s of j.steps) {
    if (s.kind === 'stage') {
      const inputs = s.inputs.map((v) => `${v.scale}+${v.haloRows}`).join(' ') || '-';
      const outputs = s.outputs.map((v) => `${v.scale} ${v.depthRows}`).join(', ');
      const resample = s.resampling.length ? `  resampled: ${s.resampling.map((r) => `${r.op} ${r.factor}`).join(', ')}` : '';
      lines.push(
        `${`stage ${s.index} (${s.nodes} nodes)`.padEnd(24)}${(s.haloLatentRows ?? 'none').padEnd(20)}${inputs.padEnd(36)}${outputs}${resample}`,
      );
      for (const f of s.findings) lines.push(`  ${f.kind} ${f.node}: ${f.reason}`);
    } else {
      lines.push(`${s.kind.padEnd(24)}${s.name}: ${s.description}`);
    }
  }
  lines.push('', j.nonlocal.length ? 'nonlocal ops:' : 'nonlocal ops: none');
  for (const n of j.nonlocal) lines.push(`  ${n.node} (${n.op}): ${n.reason}`);
  lines.push('');
  lines.push(
    j.exactTiling.possible
      ? `halo-exact tiling: possible with a halo of ${j.exactTiling.halo.rows} latent rows and ${j.exactTiling.halo.cols} latent columns`
      : `halo-exact tiling: refused, ${j.nonlocal.length} op(s) read every position: ${j.nonlocal.map((n) => `${n.node} (${n.op})`).join(', ')}`,
  );
  lines.push(
    j.sharding.possible
      ? `row sharding: possible (${j.sharding.groupNorms} GroupNorm statistics gathers, ${j.sharding.attentions} attention gathers per decode)`
      : `row sharding: refused: ${j.sharding.reasons.join('; ')}`,
  );
  if (j.collectives) {
    lines.push(
      '',
      `collectives per rank for a ${j.collectives.latent.height}x${j.collectives.latent.width} latent on ${j.collectives.ranks} ranks (calls / bytes sent):`,
    );
    j.collectives.perRank.forEach((c, rank) => lines.push(`  rank ${rank}: ${formatCollectives(c)}`));
  }
  return lines.join('\n') + '\n';
}
