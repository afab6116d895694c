import assert from 'node:assert/strict';
import { dirname, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DirectiveError, expandDirectives, formatMetric, parseArgs } from './directives.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const generated = { api: '<p>API</p>', cli: '<p>CLI</p>', bench: '<p>BENCH</p>' };
const expand = (md: string) => expandDirectives('page.md', md, root, generated);

test('a figure and the numbers quoted next to it come from one plan report', () => {
  const page = expand(
    [
      'It has {{metric:f.tiles}} tiles, ratio {{metric:f.decodedAreaRatio}} ({{metric:f.imbalance|percent}} imbalance).',
      '',
      '{{fig:f family=autoencoder-kl h=1024 w=1536 window=512x512 overlap=128x128 ranks=3 caption="A caption"}}',
    ].join('\n'),
  );
  // 128 × 192 latent, window 64, stride 48: 3 × 4 tiles; Σ extents (64+64+32)·(64+64+64+48) / (128·192).
  assert.match(page.markdown, /^It has 12 tiles, ratio 1\.563 \(\d+\.\d% imbalance\)\.$/m);
  assert.equal(page.blocks.length, 1);
  assert.match(page.markdown, /^<!--gen:0-->$/m);
  assert.match(page.blocks[0]!, /^<figure class="plan" id="fig-f"><svg [^>]*data-tiles="12" data-ranks="3"/);
  assert.ok(page.blocks[0]!.includes('Decoded-area ratio:</tspan> 1.563'));
  assert.ok(page.blocks[0]!.includes('<figcaption>A caption</figcaption>'));
});

test('without a window, a figure shows the family default tiling as diffusers enables it', () => {
  // 768 × 512 px: the width (64 latent) equals the 64-unit window, yet stride 48 < 64 gives two columns.
  const page = expand(
    '{{plan:d family=autoencoder-kl h=768 w=512 ranks=4}}\n{{metric:d.rows}} × {{metric:d.columns}}, {{metric:d.window|px}}',
  );
  assert.equal(page.markdown, '\n2 × 2, 512 × 512 px');
});

test('memory figures are float32 output arithmetic', () => {
  const page = expand(
    '{{plan:m family=autoencoder-kl h=1024 w=1536 window=512x512 overlap=128x128}}\n{{metric:m.memory.outputBytes}} {{metric:m.memory.tileOutputBytes}} {{metric:m.memory.tileRowOutputBytes|mib}}',
  );
  // Output 1024·1536 px · 3 channels · 4 bytes; the largest tile 512·512 px; the largest row of
  // tiles 64 latent rows × (64 + 64 + 64 + 48) latent columns, at 8 × 8 px per latent unit.
  assert.equal(page.markdown, `\n${1024 * 1536 * 3 * 4} ${512 * 512 * 3 * 4} ${((64 * 240 * 64 * 3 * 4) / 1024 / 1024).toFixed(1)} MiB`);
});

test("search, bucket and refusal directives render the library's answers", () => {
  const page = expand(
    [
      '{{search:s family=autoencoder-kl h=1024 w=1024 ranks=4}}',
      '{{bucket:b h=720 w=1280 buckets=1024x1024,768x1344}}',
      '{{refusal:family=autoencoder-kl h=1024 w=1024 window=100x100}}',
      'coarse {{metric:s.picks.coarse.window}}, pad {{metric:b.pad.bucket}}',
    ].join('\n'),
  );
  assert.match(page.markdown, /coarse \d+ × \d+, pad 768 × 1344$/);
  assert.match(page.blocks[0]!, /<table class="search-table">/);
  assert.match(page.blocks[0]!, /id="fig-s-coarse"/);
  assert.match(page.blocks[1]!, /<td><code>pad<\/code><\/td><td>768 × 1344<\/td>/);
  assert.match(page.blocks[2]!, /<code>WINDOW_NOT_WHOLE_LATENT<\/code>.*<code>window\.height<\/code>.*<code>100<\/code>/);
});

test('generated sections, instruments and includes', () => {
  const page = expand(
    '{{api}}\n{{cli}}\n{{bench}}\n{{instrument:explorer family=tae ranks=2}}\n{{include:docs/examples/quick-start.ts}}\n{{families}}\n{{scaling}}',
  );
  assert.deepEqual(page.blocks.slice(0, 3), ['<p>API</p>', '<p>CLI</p>', '<p>BENCH</p>']);
  assert.match(page.blocks[3]!, /^<div class="instrument" id="explorer" data-instrument="explorer" data-family="tae" data-ranks="2">/);
  assert.deepEqual(page.instruments, ['explorer']);
  assert.match(page.blocks[4]!, /^<pre><code class="language-ts">/);
  assert.ok(page.blocks[4]!.includes("from 'distvae'"));
  assert.ok(!page.blocks[4]!.includes('src/index.js'));
  assert.match(page.blocks[5]!, /<code>hunyuan-video<\/code>/);
  assert.match(page.blocks[6]!, /<figure class="scaling"/);
});

test('the families table says what a tile is and whether row sharding works for the decoder and the encoder, and why, as the registry answers', () => {
  const html = expand('{{families}}').blocks[0]!;
  const row = (name: string) => new RegExp(`<th scope="row"><code>${name.replace('.', '\\.')}</code></th>(.*?)</tr>`).exec(html)?.[1] ?? '';
  assert.match(html, /<th scope="col">a tile is<\/th><th scope="col">row sharding<\/th>/);
  // Sharded families name what their ranks exchange; the others the reason their refusal gives; then the encoder's answer.
  assert.match(
    row('autoencoder-kl'),
    /<td>decoder yes: exchanges halo rows, GroupNorm statistics \(all-gather\), attention keys and values \(gather\)<br>encoder yes<\/td>/,
  );
  assert.match(row('dc-ae'), /decoder yes: exchanges halo rows, linear-attention K·Vᵀ and K sums \(all-reduce\)<br>encoder yes/);
  assert.match(
    row('hunyuan-video-1.5'),
    /latent rows × cols with every frame, in one decoder call<\/td><td>decoder yes: .*causal attention keys and values of frames ≤ f \(gather\)<br>encoder no \(<code>NO_ENCODER_GRAPH<\/code>\): .*pack rows, columns and frames into channels/,
  );
  assert.match(row('hunyuan-video'), /<br>encoder yes<\/td>/);
  for (const name of ['wan', 'qwen-image'])
    assert.match(
      row(name),
      /<td>decoder no \(<code>NO_DECODER_GRAPH<\/code>\): its decoder runs frame by frame .*causal cache.*<br>encoder no \(<code>NO_ENCODER_GRAPH<\/code>\): its encoder runs frame-stepped/,
    );
  assert.match(row('ltx2'), /one temporal chunk .*<td>decoder no \(<code>NO_DECODER_GRAPH<\/code>\): .*stage graphs.*<br>encoder no/);
  assert.match(
    row('minimax-h3'),
    /clips of \d+ latent frames .*<td>decoder no \(<code>NO_DECODER_GRAPH<\/code>\): .*register tokens.*<br>encoder no \(<code>NO_ENCODER_GRAPH<\/code>\): .*loops over clips/,
  );
});

test('the build fails, naming page and line, when a page no longer matches the code', () => {
  const fails = (md: string, message: RegExp) =>
    assert.throws(
      () => expand(md),
      (e: unknown) => e instanceof DirectiveError && message.test(e.message),
    );
  fails('ok\n{{refusal:family=autoencoder-kl h=1024 w=1024 window=512x512}}', /^page\.md:2: .*the planner accepts this request now/);
  fails('{{fig:f family=autoencoder-kl h=1024 w=1024 window=100x100}}', /the planner refuses window 100x100: WINDOW_NOT_WHOLE_LATENT/);
  fails('{{metric:nothing.tiles}}', /nothing is not defined on this page/);
  fails('{{plan:p family=tae h=512 w=512}}\n{{metric:p.nosuch}}', /p\.nosuch: no field nosuch/);
  fails('text {{families}}', /must stand alone on its line/);
  fails('{{unknown}}', /unknown directive unknown/);
  fails('{{plan:p family=tae h=512 w=512}}\n{{plan:p family=tae h=512 w=512}}', /p is defined twice/);
  fails('{{instrument:nosuch}}', /unknown instrument "nosuch"/);
});

test('argument parsing and metric formats', () => {
  assert.deepEqual(parseArgs('name a=1 b="two words"'), {
    name: 'name',
    values: new Map([
      ['a', '1'],
      ['b', 'two words'],
    ]),
  });
  assert.throws(() => parseArgs('a=1 stray'), /only the first word may be a bare name/);
  assert.equal(formatMetric(0.04, 'percent', 'x'), '4.0%');
  assert.equal(formatMetric(1.5625, undefined, 'x'), '1.563');
  assert.equal(formatMetric({ height: 2, width: 3 }, 'px', 'x'), '2 × 3 px');
  assert.equal(formatMetric(true, undefined, 'x'), 'yes');
  assert.throws(() => formatMetric([1], undefined, 'x'), /x is \[1\], which cannot be shown/);
  assert.throws(() => formatMetric(1, 'nope', 'x'), /unknown format \|nope/);
});
