// Builds the documentation site into docs/dist (or `--out DIR`): Markdown pages rendered with
// marked after their directives are expanded from the library (figures, quoted numbers, API,
// CLI help, benchmark reports), and the in-page instruments bundled by esbuild as classic IIFE
// scripts, so the site opens from file:// as well as from any static server. The in-browser
// demo (demo.html) is the exception: an ES module with onnxruntime-web's WebAssembly beside it,
// which needs a server (npm run docs:serve).
// Usage: npm run docs [-- --out DIR]

import { build as esbuild } from 'esbuild';
import { Marked, type Tokens } from 'marked';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { escapeXml } from '../src/bench/plan-figure.js';
import { publicEntries, readApi, renderApi } from './lib/api-reference.js';
import { readBenchReports, renderBenchReports } from './lib/bench-reports.js';
import { readCliHelp, renderCli } from './lib/cli-reference.js';
import { expandDirectives, type Generated } from './lib/directives.js';
import { bundleForPages, copyOrtRuntime } from './lib/web-bundle.js';

const DOCS_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(DOCS_DIR, '..');

/** The pages in navigation order: `docs/pages/<slug>.md` → `<slug>.html`. */
export const PAGES: readonly { slug: string; nav: string }[] = [
  { slug: 'index', nav: 'Overview' },
  { slug: 'quick-start', nav: 'Quick start' },
  { slug: 'decode-paths', nav: 'Decode paths' },
  { slug: 'tile-window', nav: 'Tile window' },
  { slug: 'bucketing', nav: 'Bucketing and tiling' },
  { slug: 'from-diffusers', nav: 'From diffusers / ComfyUI' },
  { slug: 'api', nav: 'API' },
  { slug: 'cli', nav: 'CLI' },
  { slug: 'benchmarks', nav: 'Benchmarks' },
];

export const INSTRUMENT_ENTRIES: Readonly<Record<string, string>> = {
  explorer: join(DOCS_DIR, 'instruments/explorer.ts'),
  quadratic: join(DOCS_DIR, 'instruments/quadratic.ts'),
};

function slugify(text: string): string {
  return text
    .toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/&[a-z]+;/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

function markdownRenderer(): { marked: Marked; title: () => string | null; reset: () => void } {
  let used = new Map<string, number>();
  let title: string | null = null;
  const marked = new Marked({
    gfm: true,
    renderer: {
      heading(this: { parser: { parseInline(tokens: Tokens.Generic[]): string } }, token: Tokens.Heading): string {
        const html = this.parser.parseInline(token.tokens);
        if (token.depth === 1 && title === null) title = html.replace(/<[^>]+>/g, '');
        const base = slugify(html) || 'section';
        const n = used.get(base) ?? 0;
        used.set(base, n + 1);
        const id = n === 0 ? base : `${base}-${n + 1}`;
        return `<h${token.depth} id="${id}">${html}</h${token.depth}>\n`;
      },
    },
  });
  return {
    marked,
    title: () => title,
    reset: () => {
      used = new Map();
      title = null;
    },
  };
}

/** The demo page: not a Markdown page (it needs a server), linked from the overview. */
export const DEMO_PAGE = { slug: 'demo', title: 'Decode in the browser' } as const;

function pageHtml(slug: string, title: string, body: string, instruments: string[], version: string): string {
  const nav = PAGES.map(
    (p) => `<li><a href="${p.slug}.html"${p.slug === slug ? ' aria-current="page"' : ''}>${escapeXml(p.nav)}</a></li>`,
  ).join('');
  const scripts = instruments.map((i) => `<script src="assets/${i}.js"></script>`).join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeXml(slug === 'index' ? `${title} documentation` : `${title} · distvae`)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="assets/site.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="site-header"><a class="brand" href="index.html">distvae</a><nav aria-label="Pages"><ul>${nav}</ul></nav></header>
<main id="main">
${body}
</main>
<footer class="site-footer"><p>distvae ${escapeXml(version)}. Built by <code>npm run docs</code>; every figure and every number next to one is computed by the library at build time.</p></footer>
${scripts}
</body>
</html>
`;
}

/** Prints each build step with the seconds since the build started (the CLIs of build.ts and serve.ts). */
export function progressLine(): (step: string) => void {
  const started = performance.now();
  return (step) => console.log(`[${((performance.now() - started) / 1000).toFixed(1)} s] ${step}…`);
}

export interface BuildResult {
  outDir: string;
  pages: string[];
}

/** Options of `buildSite`. */
export interface BuildOptions {
  outDir?: string;
  root?: string;
  /** Each step as it starts (a build takes tens of seconds: `docs:serve` prints them). */
  onStep?: (step: string) => void;
}

export async function buildSite(options: BuildOptions = {}): Promise<BuildResult> {
  const root = options.root ?? ROOT;
  const step = options.onStep ?? (() => {});
  step('reading the API and CLI references');
  const outDir = resolve(options.outDir ?? join(DOCS_DIR, 'dist'));
  const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    exports: Record<string, unknown>;
  };
  const version = packageJson.version;
  const generated: Generated = {
    api: renderApi(publicEntries(root, packageJson).flatMap(({ entry, file }) => readApi(file, entry))),
    cli: renderCli(await readCliHelp(root)),
    bench: renderBenchReports(readBenchReports(join(root, 'bench/results'))),
  };

  step(`rendering ${PAGES.length} pages`);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(join(outDir, 'assets'), { recursive: true });
  const { marked, title, reset } = markdownRenderer();
  const used = new Set<string>();
  const pages: string[] = [];
  for (const page of PAGES) {
    const source = readFileSync(join(DOCS_DIR, 'pages', `${page.slug}.md`), 'utf8');
    const expanded = expandDirectives(`docs/pages/${page.slug}.md`, source, root, generated);
    reset();
    const html = (marked.parse(expanded.markdown, { async: false }) as string).replace(
      /<!--gen:(\d+)-->/g,
      (_, i: string) => expanded.blocks[Number(i)]!,
    );
    const file = `${page.slug}.html`;
    writeFileSync(join(outDir, file), pageHtml(page.slug, title() ?? page.nav, html, expanded.instruments, version));
    expanded.instruments.forEach((i) => used.add(i));
    pages.push(file);
  }

  const entryPoints = Object.fromEntries([...used].map((name) => [name, INSTRUMENT_ENTRIES[name]!]));
  if (Object.keys(entryPoints).length > 0) {
    step(`bundling ${Object.keys(entryPoints).length} instruments`);
    await esbuild({
      entryPoints,
      outdir: join(outDir, 'assets'),
      bundle: true,
      format: 'iife',
      platform: 'browser',
      target: 'es2020',
      minify: true,
      legalComments: 'none',
      logLevel: 'warning',
    });
  }
  copyFileSync(join(DOCS_DIR, 'assets/site.css'), join(outDir, 'assets/site.css'));

  writeFileSync(
    join(outDir, `${DEMO_PAGE.slug}.html`),
    pageHtml(DEMO_PAGE.slug, DEMO_PAGE.title, readFileSync(join(DOCS_DIR, 'demo/demo-body.html'), 'utf8'), [], version),
  );
  step('bundling the demo page');
  await bundleForPages(join(DOCS_DIR, 'demo/demo.ts'), join(outDir, 'assets/demo.js'));
  step("copying onnxruntime-web's runtime");
  copyOrtRuntime(join(outDir, 'assets/ort'));
  return { outDir, pages };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const outIndex = process.argv.indexOf('--out');
  const outDir = outIndex >= 0 ? process.argv[outIndex + 1] : undefined;
  buildSite({ ...(outDir ? { outDir } : {}), onStep: progressLine() }).then(
    (r) => console.log(`built ${r.pages.length} pages into ${r.outDir}; open ${join(r.outDir, 'index.html')}`),
    (e: unknown) => {
      console.error(e instanceof Error ? e.message : e);
      process.exit(1);
    },
  );
}
