// Page directives: `{{kind:args}}` placeholders in the Markdown that the build expands from the
// library itself, so figures and the numbers quoted next to them come from one computation.
//
// Block directives stand alone on a line and become HTML (swapped in after Markdown rendering):
//   {{fig:NAME family=F h=H w=W [frames=N] [window=HxW] [overlap=HxW] [ranks=R] [caption="…"]}}
//       a plan drawn to scale (no window: the family's default tiling, as diffusers enables it)
//   {{plan:NAME …same…}}             the same plan, defined for metrics but not drawn
//   {{search:NAME family=F h=H w=W ranks=R}}   plan search: frontier table and the picks drawn
//   {{refusal:family=F h=H w=W window=HxW [overlap=HxW] [caption="…"]}}   a refused request's reasons
//   {{bucket:NAME h=H w=W buckets=HxW,… }}    the three bucket policies for one request
//   {{families}} {{scaling}} {{api}} {{cli}} {{bench}} {{instrument:ID [key=value…]}}
//   {{include:PATH}}                 a source file (relative to the repository) as a code block
// Inline: {{metric:NAME.path[|ratio|percent|size|px|mib]}} quotes a value of a defined name;
// the name `lib` is always defined and holds constants of the code that prose quotes.
// Anything unknown, undefined or no longer true (a refusal that is now accepted) fails the build.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { escapeXml, formatPercent, formatRatio, formatSize, planFigureSvg } from '../../src/bench/plan-figure.js';
import { encoderRowShardingOf, FAMILIES, FAMILY_NAMES, planningVae, rowShardingOf } from '../../src/families/registry.js';
import type { ShardExchange } from '../../src/families/runtime-types.js';
import type { FamilySpec, Size2, VaeSpec } from '../../src/families/types.js';
import { isDistVaeError, type Reason } from '../../src/errors.js';
import { chooseBucket, parseBuckets, BUCKET_POLICIES } from '../../src/plan/buckets.js';
import { tileArea, tileGrid } from '../../src/plan/grid.js';
import { explainTileOverlapPlan, explainTileShapePlan, explainTiling, setTiling, tileShapePlan } from '../../src/plan/planner.js';
import { planReport, type PlanReport } from '../../src/plan/report.js';
import { MIN_NARROW_AXIS_LATENT, searchPlans, type SearchCandidate } from '../../src/plan/search.js';
import { sampleShapeReasons, type SampleShape } from '../../src/plan/shapes.js';
import { reasonsTableHtml } from './reasons-table.js';
import { scalingChartSvg } from './scaling-chart.js';
import { TOLERANCE_RULE } from '../instruments/quadratic-model.js';

/** HTML generated once per build and placed by `{{api}}`, `{{cli}}` and `{{bench}}`. */
export interface Generated {
  api: string;
  cli: string;
  bench: string;
}

export interface ExpandedPage {
  /** Markdown with block directives replaced by `<!--gen:N-->` markers. */
  markdown: string;
  /** HTML for each marker. */
  blocks: string[];
  /** Instrument scripts the page needs (e.g. `explorer`). */
  instruments: string[];
}

export class DirectiveError extends Error {}

interface Args {
  name: string | null;
  values: Map<string, string>;
}

export function parseArgs(text: string): Args {
  const values = new Map<string, string>();
  let name: string | null = null;
  for (const m of text.matchAll(/([A-Za-z][\w-]*)=(?:"([^"]*)"|(\S+))|(\S+)/g)) {
    if (m[4] !== undefined) {
      if (name !== null || values.size > 0)
        throw new DirectiveError(`unexpected word ${JSON.stringify(m[4])}: only the first word may be a bare name`);
      name = m[4];
    } else values.set(m[1]!, m[2] ?? m[3]!);
  }
  return { name, values };
}

function required(args: Args, key: string): string {
  const v = args.values.get(key);
  if (v === undefined) throw new DirectiveError(`missing ${key}=`);
  return v;
}

function integer(args: Args, key: string, fallback?: number): number {
  const text = args.values.get(key);
  if (text === undefined) {
    if (fallback === undefined) throw new DirectiveError(`missing ${key}=`);
    return fallback;
  }
  if (!/^\d+$/.test(text)) throw new DirectiveError(`${key}=${text} is not a whole number`);
  return Number(text);
}

function size(args: Args, key: string): Size2 | undefined {
  const text = args.values.get(key);
  if (text === undefined) return undefined;
  const m = /^(\d+)x(\d+)$/.exec(text);
  if (!m) throw new DirectiveError(`${key}=${text} is not HEIGHTxWIDTH`);
  return { height: Number(m[1]), width: Number(m[2]) };
}

function sampleOf(args: Args): SampleShape {
  const frames = args.values.has('frames') ? integer(args, 'frames') : undefined;
  return { height: integer(args, 'h'), width: integer(args, 'w'), ...(frames !== undefined ? { frames } : {}) };
}

function reasonsText(reasons: Reason[]): string {
  return reasons.map((r) => `${r.code} ${r.field}: ${r.message}`).join('; ');
}

/** A VAE with the plan the arguments describe installed, exactly as a user would install it. */
function plannedVae(args: Args): { vae: VaeSpec; sample: SampleShape } {
  const vae = planningVae(required(args, 'family'));
  const sample = sampleOf(args);
  const window = size(args, 'window');
  const overlap = size(args, 'overlap');
  if (!window && overlap) throw new DirectiveError('overlap= needs window=');
  const request = window ? { window, ...(overlap ? { overlap } : {}), sampleShape: sample } : {};
  const reasons = explainTiling(vae, request);
  if (reasons.length > 0)
    throw new DirectiveError(
      `the planner refuses ${window ? `window ${window.height}x${window.width}${overlap ? ` with overlap ${overlap.height}x${overlap.width}` : ''}` : 'the default plan'}: ${reasonsText(reasons)}`,
    );
  setTiling(vae, request);
  return { vae, sample };
}

/** Byte counts of float32 buffers a decode of this plan holds (arithmetic, not measurement). */
export interface PlanMemory {
  /** The assembled output: height × width × frames × channels × 4 bytes. */
  outputBytes: number;
  /** The largest tile's decoded output. */
  tileOutputBytes: number;
  /** The largest row of tiles' decoded output (what a streaming assembler holds besides the output). */
  tileRowOutputBytes: number;
}

function planMemory(vae: VaeSpec, report: PlanReport): PlanMemory {
  const grid = tileGrid(vae, report.latent);
  const perLatentUnit = vae.geometry.spatialRatio ** 2 * report.sample.frames * vae.geometry.outChannels * 4;
  const rowAreas = grid.rows.map((_, row) => grid.tiles.filter((t) => t.row === row).reduce((s, t) => s + tileArea(t), 0));
  return {
    outputBytes: report.sample.height * report.sample.width * report.sample.frames * vae.geometry.outChannels * 4,
    tileOutputBytes: Math.max(...grid.tiles.map(tileArea)) * perLatentUnit,
    tileRowOutputBytes: Math.max(...rowAreas) * perLatentUnit,
  };
}

function planDefinition(args: Args): { report: PlanReport; value: PlanReport & { memory: PlanMemory } } {
  const { vae, sample } = plannedVae(args);
  const report = planReport(vae, sample, integer(args, 'ranks', 1));
  return { report, value: { ...report, memory: planMemory(vae, report) } };
}

function figureHtml(name: string, report: PlanReport, caption: string | undefined): string {
  return `<figure class="plan" id="fig-${name}">${planFigureSvg(report, { idPrefix: `fig-${name}` })}${caption ? `<figcaption>${escapeXml(caption)}</figcaption>` : ''}</figure>`;
}

function searchHtml(name: string, vae: VaeSpec, sample: SampleShape, ranks: number, result: ReturnType<typeof searchPlans>): string {
  const pickOf = (c: SearchCandidate) => (['coarse', 'balanced', 'fine'] as const).filter((k) => result.picks[k] === c).join(', ');
  const rows = result.frontier.map(
    (c) =>
      `<tr${pickOf(c) ? ' class="pick"' : ''}><td>${pickOf(c) || '–'}</td><td>${formatSize(c.window)}</td><td>${formatSize(c.overlap)}</td><td>${c.tiles} (${c.rows} × ${c.columns})</td><td>${c.windowArea}</td><td>${formatRatio(c.decodedAreaRatio)}</td><td>${formatPercent(c.activationShare)}</td><td>${c.seams}</td><td>${formatPercent(c.imbalance)}</td></tr>`,
  );
  const table = `<div class="table-scroll"><table class="search-table"><caption>Frontier of ${result.candidates} candidate plan(s) for ${vae.family.name} at ${formatSize(sample, ' px')} over ${ranks} rank(s), largest window first</caption><thead><tr><th scope="col">pick</th><th scope="col">window (px)</th><th scope="col">overlap (px)</th><th scope="col">tiles (rows × columns)</th><th scope="col">window area (latent units²)</th><th scope="col">decoded-area ratio</th><th scope="col">activation share</th><th scope="col">seams</th><th scope="col">imbalance</th></tr></thead><tbody>${rows.join('')}</tbody></table></div>`;
  const figures = (['coarse', 'balanced', 'fine'] as const).flatMap((pick) => {
    const c = result.picks[pick];
    if (!c) return [];
    const report = planDefinition(
      parseArgs(
        `family=${vae.family.name} h=${sample.height} w=${sample.width} window=${c.window.height}x${c.window.width} overlap=${c.overlap.height}x${c.overlap.width} ranks=${ranks}`,
      ),
    ).report;
    return [
      figureHtml(`${name}-${pick}`, report, `${pick}: window ${formatSize(c.window, ' px')}, overlap ${formatSize(c.overlap, ' px')}`),
    ];
  });
  return table + figures.join('');
}

function refusalHtml(args: Args): string {
  const vae = planningVae(required(args, 'family'));
  const sample = sampleOf(args);
  const window = size(args, 'window');
  if (!window) throw new DirectiveError('missing window=');
  let reasons = explainTileShapePlan(vae, window.height, window.width, { sampleShape: sample });
  const overlap = size(args, 'overlap');
  if (reasons.length === 0 && overlap) {
    setTiling(vae, tileShapePlan(vae, window.height, window.width, { sampleShape: sample })!);
    reasons = explainTileOverlapPlan(vae, overlap.height, overlap.width, { sampleShape: sample });
  }
  if (reasons.length === 0) throw new DirectiveError('the planner accepts this request now; the page claims it is refused');
  return reasonsTableHtml(reasons, args.values.get('caption'));
}

function bucketHtml(args: Args): { html: string; value: Record<string, unknown> } {
  const requested = { height: integer(args, 'h'), width: integer(args, 'w') };
  const buckets = parseBuckets(required(args, 'buckets'));
  const choices = BUCKET_POLICIES.map((policy) => chooseBucket(requested, buckets, policy));
  const rows = choices.map(
    (c) =>
      `<tr><td><code>${c.policy}</code></td><td>${formatSize(c.bucket)}</td><td>${formatRatio(c.areaInflation)}</td><td>${c.contentChanged ? 'yes' : 'no'}</td><td>${c.aspectPreserved ? 'yes' : 'no'}</td><td>${escapeXml(c.note)}</td></tr>`,
  );
  const html = `<div class="table-scroll"><table class="buckets"><caption>${formatSize(requested, ' px')} against ${buckets.map((b) => `${b.height}x${b.width}`).join(', ')}</caption><thead><tr><th scope="col">policy</th><th scope="col">bucket</th><th scope="col">area inflation</th><th scope="col">content changed</th><th scope="col">aspect kept</th><th scope="col">what happens</th></tr></thead><tbody>${rows.join('')}</tbody></table></div>`;
  return { html, value: Object.fromEntries(choices.map((c) => [c.policy, c])) };
}

const TEMPORAL_WORDS: Record<FamilySpec['temporal']['kind'], (f: FamilySpec) => string> = {
  none: () => 'none (images)',
  'frame-steps': () => 'frame by frame in each tile (causal cache cleared per tile)',
  'all-frames': () => 'every frame in each decoder call (no temporal tiling, as in diffusers)',
  'temporal-chunks': (f) =>
    `chunks of window/rt + 1 latent frames; later ones drop their ${f.temporal.kind === 'temporal-chunks' ? f.temporal.dropFrame : ''} decoded frame`,
  'clip-chunks': () =>
    "fixed clips of latent frames in each tile, cross-faded (the class's own loop; T latent → 1 + 4(T−1) − 3⌊(T−1)/5⌋ frames)",
};

// What one tile of the tiling loop holds, by the family's declared time policy (its clip size read from the geometry).
const TILE_WORDS: Record<FamilySpec['temporal']['kind'], (vae: VaeSpec) => string> = {
  none: () => 'latent rows × cols of the image',
  'frame-steps': () => 'latent rows × cols with every frame, decoded one latent frame per call',
  'all-frames': () => 'latent rows × cols with every frame, in one decoder call',
  'temporal-chunks': () => 'latent rows × cols of one temporal chunk (window/rt + 1 latent frames)',
  'clip-chunks': (vae) =>
    `latent rows × cols with every frame, decoded in clips of ${vae.geometry.clips?.chunk ?? '?'} latent frames (+ ${vae.geometry.clips?.context ?? '?'} of context)`,
};

// What the ranks of a row-sharded decode exchange, as the family's runtime declares it (checked against the shard plan in strategies/shard/family-support.test.ts).
const EXCHANGE_WORDS: Record<ShardExchange, string> = {
  'halo-rows': 'halo rows',
  'group-norm-statistics': 'GroupNorm statistics (all-gather)',
  'attention-keys-values': 'attention keys and values (gather)',
  'linear-attention-sums': 'linear-attention K·Vᵀ and K sums (all-reduce)',
  'frame-causal-keys-values': 'causal attention keys and values of frames ≤ f (gather)',
};

/** The families table's row-sharding cell: yes with what the ranks exchange, or no with the reason the refusal gives; then the encoder's answer. */
function rowShardingCell(f: FamilySpec): string {
  const answer = rowShardingOf(f);
  const decoder = answer.sharded
    ? `yes: exchanges ${answer.exchanges.map((e) => EXCHANGE_WORDS[e]).join(', ')}`
    : `no (<code>NO_DECODER_GRAPH</code>): ${escapeXml(answer.why)}`;
  const e = encoderRowShardingOf(f);
  const encoder = !e ? 'no encoder' : e.sharded ? 'yes' : `no (<code>NO_ENCODER_GRAPH</code>): ${escapeXml(e.why)}`;
  return `decoder ${decoder}<br>encoder ${encoder}`;
}

function familiesHtml(): string {
  const rows = FAMILIES.map((f) => {
    let vae: VaeSpec;
    try {
      vae = planningVae(f.name);
    } catch (e) {
      // Shown, not hidden: a family whose published defaults the library refuses is a fact users meet too.
      if (!isDistVaeError(e)) throw e;
      return `<tr><th scope="row"><code>${f.name}</code></th><td>${escapeXml(f.description)}</td><td colspan="6">planningVae('${f.name}') without a config is refused: ${escapeXml(e.reasons.map((r) => r.message).join('; ') || e.message)}. Pass the model's config.json.</td><td>${rowShardingCell(f)}</td></tr>`;
    }
    const g = vae.geometry;
    const t = vae.config.tiling;
    const frames = t.frames ? `${t.frames.enabled ? 'on' : 'off'}, ${t.frames.window} / ${t.frames.overlap}` : '–';
    // A family whose own loop takes a minimum overlap (MiniMax-H3) and tiles from the start says so.
    const overlapWord = f.diffusersTiling === 'tile-and-min-overlap' ? ' (minimum; tiled by default)' : '';
    return `<tr><th scope="row"><code>${f.name}</code></th><td>${escapeXml(f.description)}</td><td>${g.spatialRatio} px${g.patchSize > 1 ? ` (patch ${g.patchSize})` : ''}, ${g.temporalRatio} frame${g.temporalRatio === 1 ? '' : 's'}</td><td>${formatSize(t.window)} / ${formatSize(t.overlap)}${overlapWord}</td><td>${f.minWindowLatent * g.spatialRatio}</td><td>${frames}</td><td>${escapeXml(TEMPORAL_WORDS[f.temporal.kind](f))}</td><td>${escapeXml(TILE_WORDS[f.temporal.kind](vae))}</td><td>${rowShardingCell(f)}</td></tr>`;
  });
  const head = [
    'family',
    'models',
    'per latent unit',
    'default window / overlap (px)',
    'smallest window (px)',
    'frame tiling (frames)',
    'time axis',
    'a tile is',
    'row sharding',
  ]
    .map((h) => `<th scope="col">${h}</th>`)
    .join('');
  return `<div class="table-scroll"><table class="families"><caption>Families with their published default configs, read from <code>src/families/</code>; row sharding of the decoder and of the encoder as each family's runtime declares it, checked against the locality analysis</caption><thead><tr>${head}</tr></thead><tbody>${rows.join('')}</tbody></table></div>`;
}

const INSTRUMENTS = ['explorer', 'quadratic'];

function instrumentHtml(args: Args): string {
  const id = args.name;
  if (!id || !INSTRUMENTS.includes(id))
    throw new DirectiveError(`unknown instrument ${JSON.stringify(id)}: expected one of ${INSTRUMENTS.join(', ')}`);
  const family = args.values.get('family');
  if (family !== undefined && !FAMILY_NAMES.includes(family as never)) throw new DirectiveError(`unknown family ${family}`);
  const data = [...args.values].map(([k, v]) => ` data-${k}="${escapeXml(v)}"`).join('');
  return `<div class="instrument" id="${id}" data-instrument="${id}"${data}><noscript>This instrument needs JavaScript.</noscript></div>`;
}

function includeHtml(root: string, path: string): string {
  const source = readFileSync(join(root, path), 'utf8');
  // Examples import the source tree so they typecheck and run in tests; readers import the package.
  const shown = source
    .replace(/from '(\.\.\/)+src\/index\.js'/g, "from 'distvae'")
    .replace(/from '(\.\.\/)+src\/entries\/(\w+)\.js'/g, "from 'distvae/$2'")
    .trimEnd();
  return `<pre><code class="language-ts">${escapeXml(shown)}</code></pre>`;
}

const MIB = 1024 * 1024;

export function formatMetric(value: unknown, format: string | undefined, path: string): string {
  const isSize = (v: unknown): v is Size2 => typeof v === 'object' && v !== null && 'height' in v && 'width' in v;
  switch (format) {
    case undefined:
      if (typeof value === 'number') return Number.isInteger(value) ? String(value) : formatRatio(value);
      if (typeof value === 'boolean') return value ? 'yes' : 'no';
      if (typeof value === 'string') return value;
      if (isSize(value)) return formatSize(value);
      break;
    case 'ratio':
      if (typeof value === 'number') return formatRatio(value);
      break;
    case 'percent':
      if (typeof value === 'number') return formatPercent(value);
      break;
    case 'size':
    case 'px':
      if (isSize(value)) return formatSize(value, format === 'px' ? ' px' : '');
      break;
    case 'mib':
      if (typeof value === 'number') return `${(value / MIB).toFixed(1)} MiB`;
      break;
    default:
      throw new DirectiveError(`unknown format |${format} (ratio, percent, size, px, mib)`);
  }
  throw new DirectiveError(`${path} is ${JSON.stringify(value)}, which cannot be shown${format ? ` as |${format}` : ''}`);
}

function resolvePath(defs: Map<string, unknown>, path: string): unknown {
  const [name, ...keys] = path.split('.');
  if (!defs.has(name!))
    throw new DirectiveError(
      `${name} is not defined on this page (define it with {{fig:${name} …}}, {{plan:…}}, {{search:…}} or {{bucket:…}})`,
    );
  let value: unknown = defs.get(name!);
  for (const key of keys) {
    if (typeof value !== 'object' || value === null || !(key in value)) throw new DirectiveError(`${path}: no field ${key}`);
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** Constants of the code that pages quote, under the predefined name `lib`. */
function libConstants(): Record<string, unknown> {
  return {
    minNarrowAxisLatent: MIN_NARROW_AXIS_LATENT,
    minWindowLatent: Object.fromEntries(FAMILIES.map((f) => [f.name, f.minWindowLatent])),
    predictionTolerance: TOLERANCE_RULE,
  };
}

const DIRECTIVE = /\{\{(\w+)(?::([^}]*))?\}\}/g;

/** Expands a page's directives; throws DirectiveError naming the page, line and directive. */
export function expandDirectives(page: string, markdown: string, root: string, generated: Generated): ExpandedPage {
  const blocks: string[] = [];
  const instruments: string[] = [];
  const defs = new Map<string, unknown>([['lib', libConstants()]]);
  const define = (name: string | null, value: unknown) => {
    if (!name) throw new DirectiveError('needs a name as its first word');
    if (defs.has(name)) throw new DirectiveError(`${name} is defined twice`);
    defs.set(name, value);
  };
  const lineOf = (offset: number, text: string) => text.slice(0, offset).split('\n').length;
  const wrap = <T>(text: string, offset: number, whole: string, fn: () => T): T => {
    try {
      return fn();
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      throw new DirectiveError(`${page}:${lineOf(offset, text)}: ${whole}: ${message}`);
    }
  };

  const blocksExpanded = markdown.replace(DIRECTIVE, (whole, kind: string, argText: string | undefined, offset: number) =>
    wrap(markdown, offset, whole, () => {
      if (kind === 'metric') return whole;
      const lineStart = markdown.lastIndexOf('\n', offset - 1) + 1;
      const lineEnd = markdown.indexOf('\n', offset);
      if (markdown.slice(lineStart, lineEnd === -1 ? undefined : lineEnd).trim() !== whole)
        throw new DirectiveError('a block directive must stand alone on its line');
      const args = parseArgs(argText ?? '');
      let html: string;
      switch (kind) {
        case 'include':
          if (!args.name) throw new DirectiveError('needs a path');
          html = includeHtml(root, args.name);
          break;
        case 'fig':
        case 'plan': {
          const { report, value } = planDefinition(args);
          define(args.name, value);
          if (kind === 'plan') return '';
          html = figureHtml(args.name!, report, args.values.get('caption'));
          break;
        }
        case 'search': {
          const vae = planningVae(required(args, 'family'));
          const sample = sampleOf(args);
          const ranks = integer(args, 'ranks');
          const refused = sampleShapeReasons(vae.geometry, sample);
          if (refused.length > 0) throw new DirectiveError(reasonsText(refused));
          const result = searchPlans(vae, sample, ranks);
          define(args.name, result);
          html = searchHtml(args.name!, vae, sample, ranks, result);
          break;
        }
        case 'refusal':
          html = refusalHtml(args);
          break;
        case 'bucket': {
          const b = bucketHtml(args);
          define(args.name, b.value);
          html = b.html;
          break;
        }
        case 'families':
          html = familiesHtml();
          break;
        case 'scaling':
          html = scalingChartSvg();
          break;
        case 'api':
        case 'cli':
        case 'bench':
          html = generated[kind];
          break;
        case 'instrument':
          html = instrumentHtml(args);
          if (!instruments.includes(args.name!)) instruments.push(args.name!);
          break;
        default:
          throw new DirectiveError(`unknown directive ${kind}`);
      }
      blocks.push(html);
      return `<!--gen:${blocks.length - 1}-->`;
    }),
  );

  const expanded = blocksExpanded.replace(DIRECTIVE, (whole, kind: string, argText: string | undefined, offset: number) =>
    wrap(blocksExpanded, offset, whole, () => {
      if (kind !== 'metric') throw new DirectiveError('unexpected directive after expansion');
      const [path, format] = (argText ?? '').trim().split('|');
      return formatMetric(resolvePath(defs, path!), format, path!);
    }),
  );
  return { markdown: expanded, blocks, instruments };
}
