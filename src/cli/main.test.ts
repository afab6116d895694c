// The CLI in-process (runCli with captured stdout / stderr): the stable JSON contract of
// `plan --json`, `plan --search --json` and `bucket --json`, and the refusal contract — exit
// code 2, a stderr message naming each offending value and its valid range, `{ error: { code,
// message, reasons } }` as the only stdout with --json, never a stack trace — for refused
// plans and for malformed arguments; a runtime failure (an unreachable transport) exits 3.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { freePort } from '../ranks/testing/redis-server.js';
import { EXIT, exitCodeOf } from './exit-codes.js';
import { abortedError, DistVaeError, RUNTIME_FAILURE_CODES } from '../errors.js';
import { writeNpy } from '../io/npy.js';
import { WAN_TINY_SAVED } from '../families/testing/video-configs.js';
import { cli, type CliRun as Run } from './testing/in-process.js';

/** `plan --family <family> --height <height> --width <width>` and the options a test adds. */
const plan = (family: string, height: string, width: string, ...rest: string[]) =>
  cli('plan', '--family', family, '--height', height, '--width', width, ...rest);

/** `bucket --height <height> --width <width> --buckets <buckets> --policy <policy>` and the options a test adds. */
const bucket = (height: string, width: string, buckets: string, policy: string, ...rest: string[]) =>
  cli('bucket', '--height', height, '--width', width, '--buckets', buckets, '--policy', policy, ...rest);

/** With --json, stdout is exactly one JSON object (one line). */
function json(run: Run): Record<string, any> {
  assert.equal(run.stdout.trim().split('\n').length, 1, `one line expected, got ${JSON.stringify(run.stdout)}`);
  const value = JSON.parse(run.stdout);
  assert.equal(typeof value, 'object');
  return value;
}

function assertNoStack(text: string): void {
  assert.doesNotMatch(text, /^\s+at .+[(:]\d+/m, `stack trace in ${text}`);
  assert.doesNotMatch(text, /internal error/);
}

/** A refusal: exit 2, reasons on stderr, `{ error }` on stdout when --json was given. */
function assertRefused(
  run: Run,
  opts: { json: boolean; code?: string; reasonCodes?: string[]; stderrIncludes?: string[] },
): Record<string, any> | null {
  assert.equal(run.code, 2, `exit code: ${run.code}, stderr: ${run.stderr}`);
  assert.ok(run.stderr.length > 0);
  assertNoStack(run.stderr);
  for (const s of opts.stderrIncludes ?? []) assert.ok(run.stderr.includes(s), `stderr lacks ${JSON.stringify(s)}: ${run.stderr}`);
  if (!opts.json) {
    assert.equal(run.stdout, '');
    return null;
  }
  const body = json(run);
  assert.deepEqual(Object.keys(body), ['error']);
  const error = body['error'];
  assert.deepEqual(Object.keys(error).sort(), ['code', 'message', 'reasons']);
  assert.equal(typeof error.message, 'string');
  if (opts.code) assert.equal(error.code, opts.code);
  assert.ok(error.reasons.length > 0);
  for (const r of error.reasons) {
    for (const k of ['code', 'field', 'valid', 'message']) assert.equal(typeof r[k], 'string', `${k} in ${JSON.stringify(r)}`);
    assert.ok('value' in r || r.code === 'MISSING_OPTION' || r.code === 'FAMILY_REQUIRED', JSON.stringify(r));
  }
  if (opts.reasonCodes)
    assert.deepEqual(
      error.reasons.map((r: { code: string }) => r.code),
      opts.reasonCodes,
    );
  return error;
}

const dir = mkdtempSync(join(tmpdir(), 'distvae-cli-'));
after(() => rmSync(dir, { recursive: true }));

test('plan --json prints one object with the contract fields, in the stated units', async () => {
  const run = await plan('autoencoder-kl', '1024', '1536', '--window', '512x512', '--overlap', '128x128', '--ranks', '2', '--json');
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stderr, '');
  const p = json(run);
  assert.equal(p['family'], 'autoencoder-kl');
  assert.deepEqual(p['latent'], { height: 128, width: 192, frames: 1 });
  assert.deepEqual(p['window'], { height: 512, width: 512 });
  assert.deepEqual(p['overlap'], { height: 128, width: 128 });
  assert.deepEqual(p['stride'], { height: 48, width: 48 });
  // rows range(0,128,48): extents 64, 64, 32; cols range(0,192,48): 64, 64, 64, 48.
  assert.deepEqual([p['tiles'], p['rows'], p['columns']], [12, 3, 4]);
  assert.equal(p['decodedAreaRatio'], (160 * 240) / (128 * 192));
  assert.equal(p['activationShare'], (64 * 64) / (128 * 192));
  assert.equal(p['seams'], 4 * 2 + 3 * 3);
  assert.equal(typeof p['imbalance'], 'number');
  assert.ok(p['imbalance'] >= 0 && p['imbalance'] < 0.05);
  assert.equal(p['ranks'].length, 2);
  for (const r of p['ranks']) assert.deepEqual(Object.keys(r).sort(), ['load', 'rank', 'tiles']);
  assert.equal(p['ranks'][0].load + p['ranks'][1].load, 160 * 240);
  assert.equal(p['imbalance'], Math.max(p['ranks'][0].load, p['ranks'][1].load) / ((160 * 240) / 2) - 1);
  assert.equal(p['tileList'].length, 12);
  assert.deepEqual(p['tileList'][0], { index: 0, row: 0, col: 0, y0: 0, y1: 64, x0: 0, x1: 64 });
  assert.deepEqual(p['tileList'][11], { index: 11, row: 2, col: 3, y0: 96, y1: 128, x0: 144, x1: 192 });
});

test('plan without --window / --overlap uses the family default plan; --window alone keeps floor(w/4) units of overlap', async () => {
  const def = json(await plan('flux2', '2048', '2048', '--json'));
  assert.deepEqual(
    [def['window'], def['overlap'], def['stride']],
    [
      { height: 1024, width: 1024 },
      { height: 256, width: 256 },
      { height: 96, width: 96 },
    ],
  );
  assert.equal(def['diffusersEquivalent'], true);
  const win = json(await plan('autoencoder-kl', '2048', '2048', '--window', '384x320', '--json'));
  assert.deepEqual(win['overlap'], { height: 96, width: 80 }); // floor(48/4)=12 and floor(40/4)=10 units
  assert.equal(win['diffusersEquivalent'], false);
  // The default LTX-2 plan works without a config (published ratios 32 / 8).
  const ltx = await plan('ltx2', '1024', '1024', '--frames', '17', '--json');
  assert.equal(ltx.code, 0, ltx.stderr);
  assert.deepEqual(json(ltx)['latent'], { height: 32, width: 32, frames: 3 });
});

test('plan for video: latent frames, temporal chunks and stride.frames; frame tiling switches', async () => {
  const hv = json(await plan('hunyuan-video', '320', '480', '--frames', '33', '--ranks', '3', '--json'));
  assert.deepEqual(hv['latent'], { height: 40, width: 60, frames: 9 });
  assert.deepEqual(hv['stride'], { height: 24, width: 24, frames: 3 });
  assert.equal(hv['frames'].chunks, 3);
  assert.equal(hv['ranks'].length, 3);
  const off = json(await plan('hunyuan-video', '320', '480', '--frames', '33', '--no-frame-tiling', '--json'));
  assert.deepEqual(off['stride'], { height: 24, width: 24 });
  assert.equal(off['frames'].enabled, false);
  const on = json(await plan('ltx2', '1024', '1024', '--frames', '41', '--frame-window', '16', '--frame-overlap', '8', '--json'));
  // 41 frames = 6 latent frames; chunks of 3 every 1: starts 0..5.
  assert.deepEqual(on['stride'], { height: 14, width: 14, frames: 1 });
  assert.equal(on['frames'].chunks, 6);
});

test('plan --search --json: { budget, candidates, overBudget, frontier, picks: { coarse, balanced, fine } }, each entry with its window, overlap and metrics, each pick with its predicted peak', async () => {
  const run = await cli('plan', '--search', '--family', 'autoencoder-kl', '--height', '2048', '--width', '2048', '--ranks', '8', '--json');
  assert.equal(run.code, 0, run.stderr);
  const s = json(run);
  assert.deepEqual(Object.keys(s).sort(), ['budget', 'candidates', 'frontier', 'overBudget', 'picks']);
  assert.equal(s['budget'], null);
  for (const pick of Object.values(s['picks']) as { prediction: { peakBytes: number } }[]) assert.ok(pick.prediction.peakBytes > 0);
  assert.equal(typeof s['candidates'], 'number');
  assert.ok(s['frontier'].length >= 3 && s['frontier'].length <= s['candidates']);
  assert.deepEqual(Object.keys(s['picks']).sort(), ['balanced', 'coarse', 'fine']);
  for (const entry of [...s['frontier'], s['picks'].coarse, s['picks'].balanced, s['picks'].fine]) {
    for (const k of ['window', 'overlap']) assert.deepEqual(Object.keys(entry[k]).sort(), ['height', 'width']);
    for (const k of ['tiles', 'rows', 'columns', 'decodedAreaRatio', 'activationShare', 'seams', 'imbalance'])
      assert.equal(typeof entry[k], 'number', k);
    assert.ok(entry.tiles >= 8 && entry.tiles <= 32);
  }
  // A latent too small for any candidate: nulls, still exit 0.
  const none = json(
    await cli('plan', '--search', '--family', 'autoencoder-kl', '--height', '64', '--width', '8192', '--ranks', '2', '--json'),
  );
  assert.deepEqual(none, { budget: null, candidates: 0, overBudget: 0, frontier: [], picks: { coarse: null, balanced: null, fine: null } });
  // The human table runs too.
  const table = await cli('plan', '--search', '--family', 'autoencoder-kl', '--height', '2048', '--width', '2048', '--ranks', '4');
  assert.equal(table.code, 0);
  assert.match(table.stdout, /coarse/);
});

test('bucket --json prints the choice; a pad that cannot fit is refused with exit 2', async () => {
  const run = await bucket('1000', '700', '1024x1024,1152x896,896x1152,1024x768', 'pad', '--json');
  assert.equal(run.code, 0, run.stderr);
  const b = json(run);
  assert.deepEqual(b['bucket'], { height: 1024, width: 768 });
  assert.deepEqual(b['contentBox'], { y0: 0, y1: 1000, x0: 0, x1: 700 });
  assert.equal(b['areaInflation'], 786432 / 700000);
  assert.equal(b['contentChanged'], false);
  const crop = json(await bucket('1000', '700', '1024x1024,1152x896', 'crop', '--json'));
  assert.equal(crop['contentChanged'], true);
  const error = assertRefused(await bucket('2000', '2000', '1024x1024', 'pad', '--json'), {
    json: true,
    code: 'INVALID_ARGUMENT',
    reasonCodes: ['NO_BUCKET_HOLDS_IMAGE'],
  });
  assert.match(error!['message'], /2000x2000/);
  assertRefused(await bucket('100', '100', '10x10,abc', 'pad', '--json'), {
    json: true,
    reasonCodes: ['BUCKET_INVALID'],
  });
  assertRefused(await bucket('100', '100', '10x10', 'stretch'), {
    json: false,
    stderrIncludes: ['stretch', 'pad, crop, resize'],
  });
});

test('refused plans: exit 2, each reason on stderr with its value and valid range; { error } on stdout with --json', async () => {
  const base = ['plan', '--family', 'autoencoder-kl', '--height', '512', '--width', '2048'];
  const win = assertRefused(await cli(...base, '--window', '100x512', '--json'), {
    json: true,
    code: 'PLAN_REFUSED',
    reasonCodes: ['WINDOW_NOT_WHOLE_LATENT'],
    stderrIncludes: ['window.height', '100', 'a multiple of 8 px'],
  });
  assert.deepEqual(
    [win!['reasons'][0].field, win!['reasons'][0].value, win!['reasons'][0].valid],
    ['window.height', 100, 'a multiple of 8 px'],
  );
  // Without --json: the same stderr, nothing on stdout.
  assertRefused(await cli(...base, '--window', '100x512'), { json: false, stderrIncludes: ['window.height', '100'] });
  // Overlap not below the window, and overlap on an axis the sample fits in one window.
  assertRefused(await cli(...base, '--window', '256x512', '--overlap', '64x512', '--json'), {
    json: true,
    reasonCodes: ['OVERLAP_NOT_BELOW_WINDOW'],
    stderrIncludes: ['overlap.width', '512', 'at most 504 px'],
  });
  assertRefused(await cli(...base, '--window', '512x512', '--overlap', '128x128', '--json'), {
    json: true,
    reasonCodes: ['OVERLAP_ON_UNTILED_AXIS'],
    stderrIncludes: ['overlap.height', '128'],
  });
  // A size that is not whole latent units; frames on an image family; bad frames for video.
  assertRefused(await plan('autoencoder-kl', '1020', '512', '--json'), {
    json: true,
    reasonCodes: ['SIZE_NOT_WHOLE_LATENT'],
    stderrIncludes: ['1020'],
  });
  assertRefused(await plan('tae', '512', '512', '--frames', '5', '--json'), {
    json: true,
    reasonCodes: ['FRAMES_ON_IMAGE_FAMILY'],
  });
  assertRefused(await plan('wan', '512', '512', '--frames', '8', '--json'), {
    json: true,
    reasonCodes: ['FRAMES_INVALID'],
    stderrIncludes: ['1 + k x 4'],
  });
  assertRefused(await plan('wan', '512', '512', '--frame-window', '16', '--json'), {
    json: true,
    reasonCodes: ['NO_TEMPORAL_TILING'],
  });
  // --search chooses windows itself.
  assertRefused(await cli('plan', '--search', ...base.slice(1), '--window', '512x512', '--json'), { json: true, code: 'INVALID_ARGUMENT' });
  // Two problems at once are both reported.
  const both = assertRefused(await cli(...base, '--window', '100x36', '--json'), { json: true });
  assert.deepEqual(
    both!['reasons'].map((r: { field: string }) => r.field),
    ['window.height', 'window.width'],
  );
});

test('malformed arguments get the same treatment: missing, negative, non-numeric, unknown family / option / command', async () => {
  const cases: { argv: string[]; reason: string; stderr: string[] }[] = [
    { argv: ['plan', '--family', 'autoencoder-kl', '--width', '512'], reason: 'MISSING_OPTION', stderr: ['--height'] },
    {
      argv: ['plan', '--family', 'autoencoder-kl', '--height=-8', '--width', '512'],
      reason: 'INVALID_NUMBER',
      stderr: ['--height', '-8', 'an integer >= 1'],
    },
    {
      argv: ['plan', '--family', 'autoencoder-kl', '--height', '-8', '--width', '512'],
      reason: 'INVALID_NUMBER',
      stderr: ['--height', '-8', 'an integer >= 1'],
    },
    {
      argv: ['plan', '--family', 'autoencoder-kl', '--height', 'abc', '--width', '512'],
      reason: 'INVALID_NUMBER',
      stderr: ['abc', 'an integer >= 1'],
    },
    { argv: ['plan', '--family', 'autoencoder-kl', '--height', '512.5', '--width', '512'], reason: 'INVALID_NUMBER', stderr: ['512.5'] },
    {
      argv: ['plan', '--family', 'autoencoder-kl', '--height', '512', '--width', '512', '--ranks', '0'],
      reason: 'INVALID_NUMBER',
      stderr: ['--ranks', '0'],
    },
    {
      argv: ['plan', '--family', 'autoencoder-kl', '--height', '512', '--width', '512', '--window', '0x512'],
      reason: 'INVALID_SIZE',
      stderr: ['0x512', 'HEIGHTxWIDTH'],
    },
    {
      argv: ['plan', '--family', 'autoencoder-kl', '--height', '512', '--width', '512', '--window', '512by512'],
      reason: 'INVALID_SIZE',
      stderr: ['512by512'],
    },
    {
      argv: ['plan', '--family', 'autoencoder-kl', '--height', '512', '--width', '512', '--overlap=-8x0'],
      reason: 'INVALID_SIZE',
      stderr: ['-8x0'],
    },
    {
      argv: ['plan', '--family', 'sd15', '--height', '512', '--width', '512'],
      reason: 'UNKNOWN_FAMILY',
      stderr: ['sd15', 'autoencoder-kl', 'ltx2'],
    },
    { argv: ['plan', '--height', '512', '--width', '512'], reason: 'FAMILY_REQUIRED', stderr: ['--family'] },
    {
      argv: ['plan', '--family', 'autoencoder-kl', '--height', '512', '--width', '512', '--bogus'],
      reason: 'BAD_ARGUMENTS',
      stderr: ['--bogus'],
    },
    {
      argv: ['plan', '--family', 'autoencoder-kl', '--height', '512', '--width', '512', 'extra'],
      reason: 'BAD_ARGUMENTS',
      stderr: ['extra'],
    },
    { argv: ['frobnicate'], reason: 'UNKNOWN_COMMAND', stderr: ['frobnicate', 'plan'] },
    { argv: ['bucket', '--height', '512', '--width', '512', '--policy', 'pad'], reason: 'MISSING_OPTION', stderr: ['--buckets'] },
  ];
  for (const c of cases) {
    assertRefused(await cli(...c.argv), { json: false, stderrIncludes: c.stderr });
    const error = assertRefused(await cli(...c.argv, '--json'), { json: true, stderrIncludes: c.stderr });
    assert.ok(
      error!['reasons'].some((r: { code: string }) => r.code === c.reason),
      `${c.argv.join(' ')}: ${JSON.stringify(error)}`,
    );
  }
});

test('--config: the family comes from _class_name; a conflicting --family, a missing file, bad JSON and a bad default plan are refused', async () => {
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify(WAN_TINY_SAVED));
  const inferred = json(await cli('plan', '--config', config, '--height', '64', '--width', '96', '--frames', '5', '--json'));
  assert.equal(inferred['family'], 'wan');
  assert.deepEqual(inferred['latent'], { height: 32, width: 48, frames: 3 });
  // A folder holding config.json works as well.
  assert.equal(json(await cli('plan', '--config', dir, '--height', '64', '--width', '96', '--json'))['family'], 'wan');
  assertRefused(await cli('plan', '--config', config, '--family', 'flux2', '--height', '64', '--width', '96', '--json'), {
    json: true,
    reasonCodes: ['FAMILY_CONFLICT'],
    stderrIncludes: ['flux2', 'AutoencoderKLWan'],
  });
  assertRefused(await cli('plan', '--config', join(dir, 'absent.json'), '--height', '64', '--width', '96', '--json'), {
    json: true,
    code: 'FILE_NOT_FOUND',
    stderrIncludes: ['absent.json'],
  });
  const notJson = join(dir, 'broken.json');
  writeFileSync(notJson, '{"_class_name": "AutoencoderKL",');
  assertRefused(await cli('plan', '--config', notJson, '--height', '64', '--width', '96', '--json'), { json: true, code: 'FILE_INVALID' });
  const badFields = join(dir, 'bad-fields.json');
  writeFileSync(badFields, JSON.stringify({ _class_name: 'AutoencoderKL', sample_size: 'big', latent_channels: -1 }));
  assertRefused(await cli('plan', '--config', badFields, '--height', '64', '--width', '96', '--json'), {
    json: true,
    code: 'CONFIG_INVALID',
    reasonCodes: ['CONFIG_FIELD_INVALID', 'CONFIG_FIELD_INVALID'],
    stderrIncludes: ['sample_size', 'latent_channels'],
  });
  // sample_size 100 with r = 8: the default plan would not land on whole latent units.
  const odd = join(dir, 'odd.json');
  writeFileSync(odd, JSON.stringify({ _class_name: 'AutoencoderKL', sample_size: 100 }));
  assertRefused(await cli('plan', '--config', odd, '--height', '1024', '--width', '1024', '--json'), {
    json: true,
    code: 'PLAN_REFUSED',
    stderrIncludes: ['100'],
  });
  // ... but an explicit window is fine.
  assert.equal((await cli('plan', '--config', odd, '--height', '1024', '--width', '1024', '--window', '512x512', '--json')).code, 0);
});

test('human output and help exit 0; bare distvae prints help and exits 2', async () => {
  const human = await plan('autoencoder-kl', '512', '1024', '--ranks', '8');
  assert.equal(human.code, 0);
  assert.match(human.stdout, /tiles 2x3 = 6/);
  assert.match(human.stdout, /idle/);
  const help = await cli('plan', '--help');
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--window HxW/);
  const bare = await cli();
  assert.equal(bare.code, 2);
  assert.match(bare.stdout, /Commands:/);
  const demo = await cli('demo');
  assert.equal(demo.code, 0);
  assert.match(demo.stdout, /autoencoder-kl/);
});

test('exit codes: 2 for a refusal, 3 for a runtime failure, 130 for a stopped run; a deadline is a TIMEOUT', async () => {
  for (const code of RUNTIME_FAILURE_CODES) assert.equal(exitCodeOf(new DistVaeError(code, 'x')), EXIT.failed, code);
  assert.equal(exitCodeOf(new DistVaeError('ABORTED', 'x')), EXIT.sigint, 'ABORTED is a cancellation, not a runtime failure');
  const timeout = AbortSignal.timeout(1);
  await new Promise((done) => setTimeout(done, 20));
  const late = abortedError(timeout);
  assert.deepEqual([late.code, exitCodeOf(late)], ['TIMEOUT', EXIT.failed], late.message);
  const stopped = new AbortController();
  stopped.abort(new Error('user pressed stop'));
  assert.equal(abortedError(stopped.signal).code, 'ABORTED');
  for (const code of ['INVALID_ARGUMENT', 'PLAN_REFUSED', 'FILE_NOT_FOUND', 'UNSUPPORTED', 'PROVIDER_UNAVAILABLE'] as const)
    assert.equal(exitCodeOf(new DistVaeError(code, 'x')), EXIT.refused, code);
  // Nothing listens on the port: the decode starts, the transport fails, the CLI exits 3.
  const port = await freePort();
  const latents = join(dir, 'z-exit.npy');
  writeNpy(latents, { dims: [1, 4, 8, 8], data: new Float32Array(256) });
  const run = await cli(
    'decode',
    '--synthetic',
    '--family',
    'tae',
    '--latents',
    latents,
    '--out',
    join(dir, 'x-exit.npy'),
    '--redis',
    `redis://127.0.0.1:${port}`,
    '--json',
  );
  assert.equal(run.code, 3, run.stderr);
  assert.equal(json(run)['error'].code, 'TRANSPORT_FAILED');
  assertNoStack(run.stderr);
});
