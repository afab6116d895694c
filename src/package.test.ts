// The package ships the library and the CLI, never their tests: the build config leaves
// `*.test.ts` and `testing/` folders out (so nothing in dist/ imports node:test), and `npm pack`
// lists only dist/, bin/, README.md and package.json. The packed tarball installs into a fresh
// project offline and imports; in the checkout 'distvae' resolves to the sources without a build.

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

test('the build compiles no test and no testing/ module, and nothing it compiles imports node:test', () => {
  const listed = execFileSync(process.execPath, [TSC, '-p', 'tsconfig.build.json', '--listFilesOnly'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f.includes('/src/'))
    .map((f) => relative(ROOT, f));
  assert.ok(listed.includes('src/index.ts') && listed.includes('src/cli/main.ts'), 'the library and the CLI are built');
  assert.deepEqual(
    listed.filter((f) => f.endsWith('.test.ts') || f.split('/').includes('testing')),
    [],
  );
  assert.deepEqual(
    listed.filter((f) => /from 'node:test'/.test(readFileSync(join(ROOT, f), 'utf8'))),
    [],
  );
});

test('npm pack lists only dist/, bin/, README.md and package.json, and no test files', () => {
  const [pack] = JSON.parse(
    execFileSync('npm', ['pack', '--dry-run', '--ignore-scripts', '--json'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }),
  ) as [{ files: { path: string }[] }];
  const paths = pack.files.map((f) => f.path);
  assert.ok(paths.includes('package.json') && paths.includes('bin/distvae.js'));
  assert.deepEqual(
    paths.filter((p) => !/^(dist\/|bin\/|README\.md$|package\.json$|LICENSE)/.test(p)),
    [],
  );
  assert.deepEqual(
    paths.filter((p) => /\.test\.(js|d\.ts|ts)(\.map)?$/.test(p) || p.split('/').includes('testing')),
    [],
  );
});

test("in the checkout 'distvae' and 'distvae/web' are the sources under tsx, with no build", () => {
  // tsconfig.json's paths map the package's own name to src/ (tsx and tsc read them); dist/ is
  // only the package's, so a stale build never answers for the sources.
  const probe =
    "const m = await import('distvae'); const w = await import('distvae/web'); console.log(JSON.stringify([import.meta.resolve('distvae'), typeof m.loadVae, typeof w.loadWebVae]));";
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', probe], { cwd: ROOT, encoding: 'utf8' });
  assert.deepEqual(JSON.parse(out), [new URL('../src/index.ts', import.meta.url).href, 'function', 'function']);
});

/**
 * A lockfile for a fresh project that pins distvae's dependencies as distvae's own lockfile does.
 * `npm ci` caches tarballs by integrity, not the registry's version lists, so without the pins an
 * offline install could not resolve distvae's ranges (the README's offline install says so).
 */
function seededLock(name: string): object {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; devOptional?: boolean }>;
  };
  const packages = Object.fromEntries(
    Object.entries(lock.packages).filter(([path, entry]) => path !== '' && !entry.dev && !entry.devOptional),
  );
  return { name, version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name, version: '1.0.0' }, ...packages } };
}

test('the packed tarball installs into a fresh project offline from the npm cache, imports, and its CLI runs', (t) => {
  const work = mkdtempSync(join(tmpdir(), 'distvae-install-'));
  try {
    // Built into a staging folder, not the checkout: a dist/ there would shadow the sources for bin/distvae.js.
    const stage = join(work, 'stage');
    execFileSync(process.execPath, [TSC, '-p', 'tsconfig.build.json', '--outDir', join(stage, 'dist')], { cwd: ROOT });
    cpSync(join(ROOT, 'bin'), join(stage, 'bin'), { recursive: true });
    for (const file of ['package.json', 'README.md']) copyFileSync(join(ROOT, file), join(stage, file));
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
        cwd: stage,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    ) as [{ filename: string }];
    const app = join(work, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }));
    writeFileSync(join(app, 'package-lock.json'), JSON.stringify(seededLock('app')));
    const install = spawnSync('npm', ['install', '--offline', '--no-audit', '--no-fund', join(work, packed.filename)], {
      cwd: app,
      encoding: 'utf8',
      env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' },
    });
    if (install.status !== 0) {
      const missing = /ENOTCACHED[\s\S]*?request to (\S+) failed/.exec(install.stderr);
      if (missing) return t.skip(`the npm cache lacks ${missing[1]}: run npm ci once with network to fill it`);
      assert.fail(`npm install --offline of the tarball failed:\n${install.stderr}`);
    }
    const probe =
      "const m = await import('distvae'); const w = await import('distvae/web'); console.log(JSON.stringify([m.loadVae, m.setTiling, m.useStrategy, m.localGroup, m.DistVaeError, w.loadWebVae].map((f) => typeof f)));";
    const types = JSON.parse(
      execFileSync(process.execPath, ['--input-type=module', '-e', probe], { cwd: app, encoding: 'utf8' }),
    ) as string[];
    assert.deepEqual(types, new Array(6).fill('function'));
    const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
    assert.equal(
      execFileSync(join(app, 'node_modules', '.bin', 'distvae'), ['--version'], { encoding: 'utf8' }).trim(),
      `distvae ${version}`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('every install script in the lockfile is denied by allowScripts with a reason in docs/design.md, and no .npmrc makes npm warn', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { allowScripts: Record<string, boolean> };
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { hasInstallScript?: boolean }>;
  };
  const scripted = Object.entries(lock.packages)
    .filter(([, p]) => p.hasInstallScript)
    .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
  assert.ok(scripted.includes('onnxruntime-node'), 'the lockfile was read');
  const design = readFileSync(join(ROOT, 'docs', 'design.md'), 'utf8');
  const section = design.slice(design.indexOf('### 2.4 Install scripts'), design.indexOf('## 3.'));
  for (const name of new Set([...scripted, ...Object.keys(pkg.allowScripts)])) {
    assert.equal(pkg.allowScripts[name], false, `allowScripts covers ${name}`);
    assert.ok(section.includes(`- \`${name}\``), `docs/design.md §2.4 gives the reason for ${name}`);
  }
  // npm 11 warns "Unknown project config" on every npx for a key it does not define.
  assert.equal(existsSync(join(ROOT, '.npmrc')), false);
});
