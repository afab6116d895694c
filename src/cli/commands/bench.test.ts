// `distvae bench` end to end on a tiny synthetic AutoencoderKL (seconds, not minutes): the JSON
// report validated field by field against its schema (schema 1, `ran`, one cell, every arm),
// the searched arms equal `searchPlans`' picks, the shard arm agrees with the baseline to
// float32 tolerance, the Markdown and one SVG per tiled plan lie next to the JSON and the report
// path is the last line on stdout. Bad arguments are refused with exit code 2 before any work.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ARM_NAMES } from '../../bench/arms.js';
import { TINY_KL } from '../../ranks/testing/tiny-vae.js';
import { planningVae } from '../../families/registry.js';
import { writeNpy } from '../../io/npy.js';
import { searchPlans } from '../../plan/search.js';
import { runCli } from '../main.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-bench-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const config = join(dir, 'config.json');
writeFileSync(config, JSON.stringify({ _class_name: 'AutoencoderKL', ...TINY_KL }));

async function cli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t), stderrIsTTY: false });
  return { code, stdout, stderr };
}

type Json = Record<string, any>;
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isSize = (v: unknown) => typeof v === 'string' && /^\d+x\d+$/.test(v);

/** Every problem with a report against schema 1 (empty when valid). */
function schemaProblems(report: Json, ranks: number, repeat: number): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => void (ok || problems.push(what));
  check(report['schema'] === 1, 'schema is 1');
  const ran = report['ran'] as Json;
  for (const k of ['date', 'machine', 'cpu', 'node', 'onnxruntime'])
    check(typeof ran?.[k] === 'string' && ran[k].length > 0, `ran.${k} is a non-empty string`);
  check(Number.isInteger(ran?.['cores']) && ran['cores'] > 0, 'ran.cores is a positive integer');
  check(ran?.['commit'] === null || /^[0-9a-f]{40}(-dirty)?$/.test(ran?.['commit']), 'ran.commit is a git hash or null');
  check(
    Array.isArray(ran?.['argv']) && ran['argv'][0] === 'bench' && ran['argv'].every((a: unknown) => typeof a === 'string'),
    'ran.argv lists the command line',
  );
  check(Number.isInteger(ran?.['threads']), 'ran.threads is an integer');
  check(Array.isArray(report['cells']) && report['cells'].length === 1, 'one cell');
  const cell = report['cells']?.[0] as Json;
  if (!cell) return problems;
  check(typeof cell['family'] === 'string' && typeof cell['className'] === 'string', 'cell.family / className');
  check(
    ['height', 'width', 'frames'].every((k) => Number.isInteger(cell['sample']?.[k])),
    'cell.sample',
  );
  check(Array.isArray(cell['latentDims']) && typeof cell['latentSource'] === 'string', 'cell.latentDims / latentSource');
  check(cell['ranks'] === ranks && cell['repeat'] === repeat && Number.isInteger(cell['warmup']), 'cell.ranks / repeat / warmup');
  check(cell['complete'] === true, 'cell.complete');
  check(cell['reference'] === null || (ARM_NAMES as readonly string[]).includes(cell['reference']), 'cell.reference is an arm or null');
  check(isNumber(cell['search']?.['candidates']) && isNumber(cell['search']?.['frontier']), 'cell.search');
  check(Array.isArray(cell['arms']), 'cell.arms is a list');
  for (const arm of (cell['arms'] ?? []) as Json[]) {
    const at = `arm ${arm['name']}`;
    check((ARM_NAMES as readonly string[]).includes(arm['name']), `${at}: name is an arm`);
    check(['ok', 'failed', 'unsupported', 'no-plan'].includes(arm['status']), `${at}: status`);
    if (arm['status'] !== 'ok') {
      check(typeof arm['reason'] === 'string' && arm['reason'].length > 0, `${at}: a reason`);
      continue;
    }
    check(isSize(arm['window']) && isSize(arm['overlap']), `${at}: window / overlap HxW`);
    for (const k of ['ranksUsed', 'tiles', 'seams']) check(Number.isInteger(arm[k]) && arm[k] >= 0, `${at}: ${k}`);
    check(
      arm['decodedAreaRatio'] >= 1 && arm['activationShare'] > 0 && arm['activationShare'] <= 1 && arm['imbalance'] >= 0,
      `${at}: plan metrics in range`,
    );
    const l = arm['latency'] as Json;
    check(
      isNumber(l?.['min']) && l['min'] > 0 && l['min'] <= l['median'] && l['median'] <= l['max'],
      `${at}: latency min <= median <= max`,
    );
    check(Array.isArray(arm['runs']) && arm['runs'].length === repeat, `${at}: one latency per timed run`);
    const peaks = arm['peakRssBytes'] as (number | null)[];
    check(Array.isArray(peaks) && peaks.length === ranks, `${at}: a peak RSS entry per rank`);
    check(
      peaks.filter((p) => p !== null).length === arm['ranksUsed'] && peaks.every((p) => p === null || p > 10 * 2 ** 20),
      `${at}: measured peaks for the ranks used`,
    );
    check(arm['maxPeakRssBytes'] === Math.max(...peaks.filter((p): p is number => p !== null)), `${at}: maxPeakRssBytes`);
    const c = arm['collectives'] as Json;
    check(Number.isInteger(c?.['calls']) && Number.isInteger(c?.['bytes']) && typeof c?.['byKind'] === 'object', `${at}: collectives`);
    check(isNumber(arm['speedup']) && arm['speedup'] > 0 && isNumber(arm['memoryRatio']) && arm['memoryRatio'] > 0, `${at}: ratios`);
    if (arm['name'] === cell['reference']) {
      check(arm['agreement'] === null, `${at}: the reference has no agreement`);
      continue;
    }
    const a = arm['agreement'] as Json;
    check(isNumber(a?.['maxAbs']) && (a['psnr'] === null || isNumber(a['psnr'])) && Number.isInteger(a['values']), `${at}: agreement`);
    if (arm['plan'] && arm['tiles'] > 1) {
      check(a['seamBand']?.['values'] + a['interior']?.['values'] === a['values'], `${at}: seam band and interior partition the values`);
      check(Array.isArray(arm['plan']['tileList']) && arm['plan']['tileList'].length === arm['tiles'], `${at}: the plan lists its tiles`);
    }
  }
  return problems;
}

test('bench on a tiny synthetic AutoencoderKL writes a schema-1 report, a Markdown table and an SVG per plan; the path is printed last', async () => {
  const out = join(dir, 'report.json');
  // Four arms keep it to seconds: tile and balanced run exactly the code of coarse and fine (a tiled plan on the group).
  const run = await cli(
    'bench',
    '--config',
    config,
    '--height',
    '64',
    '--width',
    '96',
    '--ranks',
    '2',
    '--arms',
    'fine,none,coarse,shard',
    '--repeat',
    '1',
    '--warmup',
    '0',
    '--out',
    out,
  );
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout.trim().split('\n').at(-1), out);
  assert.match(run.stderr, /bench: none .*run 1\/1/);
  const report = JSON.parse(readFileSync(out, 'utf8')) as Json;
  assert.deepEqual(schemaProblems(report, 2, 1), []);
  const cell = report['cells'][0] as Json;
  const arms = new Map((cell['arms'] as Json[]).map((a) => [a['name'] as string, a]));
  const arm = (name: string): Json => arms.get(name)!;
  assert.deepEqual([...arms.keys()], ['none', 'shard', 'coarse', 'fine'], 'arms run in a fixed order');
  assert.equal(cell['reference'], 'none');
  for (const a of arms.values()) assert.equal(a['status'], 'ok', `${a['name']}: ${a['reason']}`);
  // Row sharding reproduces the baseline; its GroupNorms and attention talk between the ranks.
  assert.ok(arm('shard')['agreement']['maxAbs'] <= 1e-4);
  assert.ok(arm('shard')['collectives']['byKind']['allGather']['calls'] > 0);
  // The searched arms are searchPlans' picks.
  const picks = searchPlans(planningVae('autoencoder-kl', TINY_KL), { height: 64, width: 96 }, 2).picks;
  for (const name of ['coarse', 'fine'] as const) {
    const pick = picks[name]!;
    assert.equal(arm(name)['window'], `${pick.window.height}x${pick.window.width}`, name);
    assert.equal(arm(name)['overlap'], `${pick.overlap.height}x${pick.overlap.width}`, name);
  }
  const files = readdirSync(dir)
    .filter((f) => f.startsWith('report.'))
    .sort();
  assert.deepEqual(files, ['report.coarse.svg', 'report.fine.svg', 'report.json', 'report.md']);
  const svg = readFileSync(join(dir, 'report.coarse.svg'), 'utf8');
  assert.match(svg, new RegExp(`^<svg [^>]*data-tiles="${arm('coarse')['tiles']}" data-ranks="2"`));
  assert.match(svg, /coarse: autoencoder-kl 64×96, window \d+x\d+, 2 rank\(s\), median [\d.]+ s/);
  const md = readFileSync(join(dir, 'report.md'), 'utf8');
  for (const name of arms.keys()) assert.match(md, new RegExp(`^\\| ${name} \\| `, 'm'));
});

test('bench refuses bad arguments with exit code 2 before any work', async () => {
  const base = ['bench', '--config', config, '--height', '64', '--width', '96'];
  const refused = async (argv: string[], field: string, pattern: RegExp) => {
    const run = await cli(...argv);
    assert.equal(run.code, 2, `${argv.join(' ')}: ${run.stderr}`);
    assert.equal(run.stdout, '');
    assert.doesNotMatch(run.stderr, /bench: loading/, 'nothing was loaded');
    assert.match(run.stderr, new RegExp(`^  - ${field.replace(/[.[\]]/g, '\\$&')} = `, 'm'), `${field} named in ${run.stderr}`);
    assert.match(run.stderr, pattern);
  };
  await refused([...base, '--ranks', '2', '--arms', 'none,tiles'], '--arms', /unknown arm\(s\) "tiles"/);
  await refused([...base, '--ranks', '2', '--arms', 'none,none'], '--arms', /repeated arm\(s\) none/);
  await refused(base, '--ranks', /--ranks is required/);
  await refused([...base, '--ranks', '0'], '--ranks', /--ranks "0" is not an integer in \[1, 64\]/);
  await refused([...base, '--ranks', '2', '--repeat', '0'], '--repeat', /--repeat "0"/);
  await refused([...base, '--ranks', '2', '--out', join(dir, 'r.txt')], '--out', /must end in \.json/);
  await refused([...base, '--ranks', '2', '--out', join(dir, 'absent', 'r.json')], '--out', /does not exist/);
  await refused([...base, '--ranks', '2', '--latents', join(dir, 'absent.npy')], '--latents', /no such file/);
  await refused(['bench', '--config', config, '--height', '63', '--width', '96', '--ranks', '2'], 'size.height', /63/);
  await refused(
    ['bench', '--family', 'autoencoder-kl', '--vae', join(dir, 'absent'), '--synthetic', '--height', '64', '--width', '64', '--ranks', '1'],
    'argv',
    /Unknown option '--synthetic'/,
  );
  // A latent that does not match the size is refused before the VAE is loaded.
  const z = join(dir, 'z.npy');
  writeNpy(z, { dims: [1, 4, 16, 16], data: new Float32Array(4 * 16 * 16) });
  await refused([...base, '--ranks', '1', '--latents', z], 'latents.dims', /16×16 latent units, but --height 64 --width 96 need 32×48/);
  assert.equal(existsSync(join(dir, 'bench-report.json')), false);
});
