// Browser tests of the built site: Debian's Chromium, driven by playwright-core, loads every page
// from file:// (no server), with no console errors and no broken links or anchors, and the two
// instruments are operated with the mouse and with the keyboard. Screenshots of every page go to
// test-output/docs/.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import * as plan from '../src/entries/plan.js';
import * as api from '../src/index.js';
import { buildSite, PAGES } from './build.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'test-output/docs');
const SITE = join(OUT, 'site');
const SCREENSHOT_MAX_HEIGHT = 4000;

let context: BrowserContext;
let userDataDir: string;

/** The build's steps, as reported. */
const steps: string[] = [];

before(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: the documentation's browser tests need Debian's chromium package. Install it with \`apt-get install chromium\` (CI's .ci/run does).`,
    );
  }
  mkdirSync(OUT, { recursive: true });
  await buildSite({ outDir: SITE, onStep: (step) => steps.push(step) });
  userDataDir = mkdtempSync(join(tmpdir(), 'distvae-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1100, height: 900 },
  });
});

after(async () => {
  await context?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

test('the build reports its steps as it goes (docs:serve prints them while it builds)', () => {
  assert.deepEqual(
    steps.map((s) => s.replace(/\d+/g, 'N')),
    [
      'reading the API and CLI references',
      'rendering N pages',
      'bundling N instruments',
      'bundling the demo page',
      "copying onnxruntime-web's runtime",
    ],
  );
});

const pageUrl = (slug: string) => pathToFileURL(join(SITE, `${slug}.html`)).href;

/** Opens a page and records console errors, uncaught exceptions and failed requests. */
async function open(slug: string): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`exception: ${e.message}`));
  page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()}`));
  await page.goto(pageUrl(slug), { waitUntil: 'load' });
  return { page, errors };
}

test('every page loads from file:// without console errors, and every link and anchor resolves', async () => {
  const idsByFile = new Map<string, Set<string>>();
  const links: { from: string; url: string }[] = [];
  for (const { slug } of PAGES) {
    const { page, errors } = await open(slug);
    assert.equal(await page.locator('h1').count(), 1, `${slug}: one h1`);
    idsByFile.set(join(SITE, `${slug}.html`), new Set(await page.$$eval('[id]', (els) => els.map((e) => e.id))));
    const urls = await page.$$eval('a[href], link[href], script[src], img[src]', (els) =>
      els.map((e) =>
        e instanceof HTMLAnchorElement || e instanceof HTMLLinkElement ? e.href : (e as HTMLScriptElement | HTMLImageElement).src,
      ),
    );
    links.push(...urls.map((url) => ({ from: slug, url })));
    // Whole page, up to a height that keeps the long API page cheap to capture.
    const height = Math.min(await page.evaluate(() => document.documentElement.scrollHeight), SCREENSHOT_MAX_HEIGHT);
    await page.screenshot({ path: join(OUT, `${slug}.png`), fullPage: true, clip: { x: 0, y: 0, width: 1100, height } });
    assert.deepEqual(errors, [], `${slug}: console errors`);
    await page.close();
  }
  const broken: string[] = [];
  for (const { from, url } of links) {
    const u = new URL(url);
    if (u.protocol === 'data:' || u.protocol === 'http:' || u.protocol === 'https:') continue;
    if (u.protocol !== 'file:') {
      broken.push(`${from}: unexpected link ${url}`);
      continue;
    }
    const path = fileURLToPath(new URL(u.pathname, u));
    if (!path.startsWith(SITE) || !existsSync(path)) broken.push(`${from}: ${url} is not a file of the site`);
    else if (u.hash) {
      const ids = idsByFile.get(path);
      const id = decodeURIComponent(u.hash.slice(1));
      if (!ids) broken.push(`${from}: ${url} points into a file that is not a page`);
      else if (!ids.has(id)) broken.push(`${from}: ${url}: no element with id "${id}"`);
    }
  }
  assert.deepEqual(broken, []);
  assert.ok(links.length > 50, 'the pages link to each other');
});

test('the API page has an entry for every runtime export of src/index.ts', async () => {
  const { page } = await open('api');
  const ids = new Set(await page.$$eval('.api-entry', (els) => els.map((e) => e.id)));
  const missing = Object.keys(api).filter((name) => !ids.has(`api-${name}`));
  assert.deepEqual(missing, []);
  assert.match(await page.locator('#api-tileShapePlan pre').innerText(), /tileShapePlan\(vae: VaeSpec, heightPx: number, widthPx: number/);
  await page.close();
});

test('function instrument: Reset, a = 1, x = 1.5, predict 2.25, Play shows y = 2.25 and a match; a wrong prediction a mismatch', async () => {
  const { page, errors } = await open('bucketing');
  const root = page.locator('#quadratic');
  await page.getByRole('button', { name: 'Reset', exact: true }).click();
  await page.getByLabel('a', { exact: true }).fill('1');
  await page.getByLabel('x', { exact: true }).fill('1.5');
  await page.getByLabel('Prediction', { exact: true }).fill('2.25');
  await page.getByRole('button', { name: 'Play', exact: true }).click();
  await page.locator('#quadratic[data-verdict]').waitFor();
  assert.equal(await root.getAttribute('data-verdict'), 'match');
  assert.equal(await page.locator('#quad-y').innerText(), '2.25');
  assert.match(await root.locator('.quad-verdict').innerText(), /^Match: your prediction 2\.25 is within/);
  assert.deepEqual(await root.locator('.quad-stages li').allInnerTexts(), [
    'x = 1.5',
    'x² = 1.5 × 1.5 = 2.25',
    'y = a·x² = 1 × 2.25 = 2.25',
  ]);
  assert.equal(await root.locator('svg.quad-plot circle.point').count(), 1);
  assert.equal(await root.locator('svg.quad-plot polyline.curve').count(), 1);

  await page.getByRole('button', { name: 'Reset', exact: true }).click();
  assert.equal(await page.locator('#quad-y').innerText(), '?');
  await page.getByLabel('Prediction', { exact: true }).fill('3');
  await page.getByRole('button', { name: 'Play', exact: true }).click();
  await page.locator('#quadratic[data-verdict]').waitFor();
  assert.equal(await root.getAttribute('data-verdict'), 'mismatch');
  assert.match(await root.locator('.quad-verdict').innerText(), /^Mismatch: your prediction 3 is off by 0\.75 from y = 2\.25/);
  await page.screenshot({
    path: join(OUT, 'bucketing-instrument-mismatch.png'),
    fullPage: false,
    clip: (await root.boundingBox()) ?? undefined,
  });
  assert.deepEqual(errors, []);
  await page.close();
});

test('function instrument from the keyboard: Tab to the buttons, Enter resets, Space steps one stage at a time', async () => {
  const { page } = await open('bucketing');
  const root = page.locator('#quadratic');
  const focused = () => page.evaluate(() => (document.activeElement as HTMLElement | null)?.textContent ?? '');
  await page.getByLabel('a', { exact: true }).fill('1');
  await page.getByLabel('x', { exact: true }).fill('1.5');
  await page.getByLabel('Prediction', { exact: true }).fill('2.25');
  await page.keyboard.press('Tab');
  assert.equal(await focused(), 'Reset');
  await page.keyboard.press('Enter');
  assert.equal(await root.getAttribute('data-stage'), '0');
  await page.keyboard.press('Tab');
  assert.equal(await focused(), 'Step');
  await page.keyboard.press('Space');
  assert.equal(await root.getAttribute('data-stage'), '1');
  assert.deepEqual(await root.locator('.quad-stages li').allInnerTexts(), ['x = 1.5']);
  assert.equal(await page.locator('#quad-y').innerText(), '?');
  await page.keyboard.press('Space');
  await page.keyboard.press('Space');
  assert.equal(await root.getAttribute('data-stage'), '3');
  assert.equal(await root.getAttribute('data-verdict'), 'match');
  assert.equal(await page.locator('#quad-y').innerText(), '2.25');

  // A wrong prediction, then Play from the keyboard.
  await page.getByLabel('Prediction', { exact: true }).fill('2');
  await page.keyboard.press('Tab'); // Reset
  await page.keyboard.press('Tab'); // Step
  await page.keyboard.press('Tab'); // Play
  assert.equal(await focused(), 'Play');
  await page.keyboard.press('Enter');
  await page.waitForFunction(
    () =>
      document.querySelector('#quadratic')?.getAttribute('data-playing') === 'false' &&
      document.querySelector('#quadratic')?.getAttribute('data-stage') === '3',
  );
  assert.equal(await root.getAttribute('data-verdict'), 'mismatch');
  await page.close();
});

test('explorer: redraws on input, matches the planner, and shows the reasons for a refused window', async () => {
  const { page, errors } = await open('tile-window');
  const explorer = page.locator('#explorer');
  const figure = explorer.locator('svg.plan-figure');
  const expected = (window: number, ranks: number) => {
    const vae = api.planningVae('autoencoder-kl');
    const sampleShape = { height: 1024, width: 1536 };
    api.setTiling(vae, plan.tileShapePlan(vae, window, 512, { sampleShape })!);
    api.setTiling(vae, plan.tileOverlapPlan(vae, 128, 128, { sampleShape })!);
    return api.planReport(vae, sampleShape, ranks);
  };

  assert.equal(await figure.getAttribute('data-tiles'), String(expected(512, 3).tiles));
  await page.getByLabel('Window height', { exact: true }).fill('256');
  const redrawn = expected(256, 3);
  await page.locator(`#explorer svg.plan-figure[data-tiles="${redrawn.tiles}"]`).waitFor();
  assert.equal(await explorer.locator('svg.plan-figure rect[data-tile]').count(), redrawn.tiles);
  assert.match(
    await explorer.locator('.explorer-summary').innerText(),
    new RegExp(`^${redrawn.tiles} tile\\(s\\), decoded-area ratio ${redrawn.decodedAreaRatio.toFixed(3)}`),
  );
  await page.getByLabel('Ranks', { exact: true }).fill('5');
  await page.locator('#explorer svg.plan-figure[data-ranks="5"]').waitFor();

  await page.getByLabel('Window height', { exact: true }).fill('100');
  await page.locator('#explorer[data-state="refused"]').waitFor();
  assert.equal(await figure.count(), 0);
  const row = explorer.locator('table.reasons tbody tr').first();
  assert.deepEqual((await row.locator('td').allInnerTexts()).slice(0, 3), ['WINDOW_NOT_WHOLE_LATENT', 'window.height', '100']);
  assert.match(
    await row.locator('td').nth(4).innerText(),
    /window\.height = 100 px is not a whole number of latent units for autoencoder-kl/,
  );
  await page.screenshot({ path: join(OUT, 'tile-window-explorer-refused.png'), clip: (await explorer.boundingBox()) ?? undefined });

  await page.getByLabel('Family', { exact: true }).selectOption('wan');
  assert.equal(await page.getByLabel('Window height', { exact: true }).inputValue(), '256');
  await page.locator('#explorer[data-state="plan"]').waitFor();
  assert.deepEqual(errors, []);
  await page.close();
});
