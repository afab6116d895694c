// Human-readable text for plan reports and search results (the CLI's default output).

import { type BudgetedSearch } from '../entries/memory.js';
import { type SearchCandidate } from '../entries/plan.js';
import { formatBytes, type PlanReport, type SearchResult } from '../index.js';

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;
const x = (s: { height: number; width: number }) => `${s.height}x${s.width}`;

export function formatPlan(r: PlanReport): string {
  const lines: string[] = [];
  const frames = r.sample.frames > 1 || r.latent.frames > 1 ? `, ${r.sample.frames} frames (${r.latent.frames} latent)` : '';
  lines.push(`${r.family} (${r.className}): ${x(r.sample)} px${frames} -> latent ${x(r.latent)}`);
  if (r.tiled) {
    lines.push(
      `window ${x(r.window)} px, overlap ${x(r.overlap)} px, stride ${r.stride.height}x${r.stride.width} latent units; diffusers-equivalent: ${r.diffusersEquivalent ? 'yes' : `no (${r.diffusersDifference})`}`,
    );
    if (r.seamOverlaps) {
      lines.push(
        `overlap ${x(r.overlap)} px is the minimum: the class spreads the slack, so seams overlap ${r.seamOverlaps.height.join(', ') || '-'} px (rows) and ${r.seamOverlaps.width.join(', ') || '-'} px (columns)`,
      );
    }
  } else {
    lines.push('untiled: one decoder call over the whole latent');
  }
  if (r.frames) {
    lines.push(
      r.frames.enabled
        ? `temporal tiling: window ${r.frames.window} frames, overlap ${r.frames.overlap}, ${r.frames.chunks} chunk(s)`
        : 'temporal tiling: off',
    );
  }
  lines.push(
    `tiles ${r.rows}x${r.columns} = ${r.tiles}; decoded area x${r.decodedAreaRatio.toFixed(3)}; activation share ${pct(r.activationShare)}; seams ${r.seams}; imbalance ${pct(r.imbalance)}`,
  );
  if (r.note) lines.push(`note: ${r.note}`);
  lines.push('', 'rank  load        tiles');
  for (const rank of r.ranks)
    lines.push(`${String(rank.rank).padEnd(6)}${String(rank.load).padEnd(12)}${rank.tiles.length ? rank.tiles.join(' ') : '(idle)'}`);
  lines.push('', 'tile  row  col  rows (latent)  cols (latent)');
  for (const t of r.tileList) {
    lines.push(
      `${String(t.index).padEnd(6)}${String(t.row).padEnd(5)}${String(t.col).padEnd(5)}${`${t.y0}..${t.y1}`.padEnd(15)}${t.x0}..${t.x1}`,
    );
  }
  return lines.join('\n') + '\n';
}

type Candidate = SearchCandidate & { prediction?: { peakBytes: number } };

function candidateLine(label: string, c: Candidate | null): string {
  if (!c) return `${label.padEnd(10)}(none)`;
  const peak = c.prediction ? `  predicted peak ${formatBytes(c.prediction.peakBytes)}` : '';
  return `${label.padEnd(10)}window ${x(c.window)} overlap ${x(c.overlap)}  tiles ${c.rows}x${c.columns}=${c.tiles}  decoded x${c.decodedAreaRatio.toFixed(3)}  activation ${pct(c.activationShare)}  seams ${c.seams}  imbalance ${pct(c.imbalance)}${peak}`;
}

/** A search's text: with a budget (families with a memory model), what it dropped and each plan's predicted peak. */
export function formatSearch(result: SearchResult | BudgetedSearch): string {
  const budget = !('budget' in result)
    ? ''
    : result.budget
      ? `; memory budget ${formatBytes(result.budget.bytes)}: ${result.overBudget} predicted over it, dropped before the frontier`
      : '; no memory budget given (--max-memory): none dropped';
  const lines = [`${result.candidates} candidate grid(s)${budget}; ${result.frontier.length} on the Pareto frontier`, ''];
  lines.push(
    candidateLine('coarse', result.picks.coarse),
    candidateLine('balanced', result.picks.balanced),
    candidateLine('fine', result.picks.fine),
  );
  lines.push('', 'frontier (largest window first):');
  for (const c of result.frontier) lines.push(candidateLine('', c));
  lines.push('', 'Profile names describe geometry, not speed: measure them (distvae bench).');
  return lines.join('\n') + '\n';
}
