// `npm run bundle`: the portable Linux x64 bundle (issue 26), distvae-linux-x64.tar.xz, for GPU
// machines and workers that have no Node.js. One folder, distvae/, holding:
//   bin/distvae        a POSIX sh launcher that runs the bundled node on the CLI (no node on PATH needed)
//   node/bin/node      this machine's Node.js binary (process.execPath)
//   lib/distvae/       the built package (tsc -p tsconfig.build.json → dist/, no maps or .d.ts),
//                      its package.json and bin/distvae.js, and node_modules/ with only the runtime
//                      dependencies a decode needs: onnxruntime-node's linux-x64 binaries only, no
//                      onnxruntime-web (the page's runtime), no dev tools, no install-time packages
//   BUILD.json         the commit, the Node and package versions it was built from
// Rank processes fork process.execPath, so they run on the bundled node too.
//
//   npm run bundle [-- --out PATH.tar.xz] [--keep-staging DIR]

import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Size the issue allows the tarball. */
export const MAX_BUNDLE_BYTES = 45 * 2 ** 20;

/** Dependencies a package declares that only its install script uses: left out of the bundle. */
const INSTALL_ONLY: Readonly<Record<string, readonly string[]>> = {
  // adm-zip and global-agent download the CUDA provider libraries at install time (docs/design.md §2.4).
  'onnxruntime-node': ['adm-zip', 'global-agent'],
};

/** The page's runtime: never needed by a Node decode. */
const EXCLUDED = new Set(['onnxruntime-web']);

interface PackageJson {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

const readPackage = (dir: string): PackageJson => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as PackageJson;

/** Where Node would resolve package `name` from a package at `from`: the nearest node_modules/name up the tree. */
function resolvePackage(name: string, from: string): string | null {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === ROOT || dirname(dir) === dir) return null;
  }
}

/** The package folders (relative to the root) a production install of the root's dependencies needs. */
export function runtimePackages(): string[] {
  const found = new Set<string>();
  const visit = (dir: string): void => {
    const pkg = readPackage(dir);
    const skip = new Set(INSTALL_ONLY[pkg.name] ?? []);
    const deps = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.optionalDependencies ?? {})];
    for (const name of deps) {
      if (EXCLUDED.has(name) || skip.has(name)) continue;
      const at = resolvePackage(name, dir);
      if (at === null) continue; // an optional dependency for another platform, not installed
      const rel = relative(ROOT, at);
      if (found.has(rel)) continue;
      found.add(rel);
      visit(at);
    }
  };
  visit(ROOT);
  return [...found].sort();
}

/** Files a runtime never reads: sources maps, declarations, docs other than licences. */
const droppable = (name: string): boolean => /\.(map|d\.ts|d\.mts|d\.cts|md|markdown)$/i.test(name) && !/^licen[cs]e/i.test(name);

/** onnxruntime-node's binaries for other platforms (bin/napi-vN/PLATFORM/ARCH). */
function otherPlatform(path: string): boolean {
  const m = /onnxruntime-node\/bin\/napi-v\d+\/([^/]+)(?:\/([^/]+))?/.exec(path);
  if (!m) return false;
  return m[1] !== 'linux' || (m[2] !== undefined && m[2] !== 'x64');
}

function copyFiltered(from: string, to: string): void {
  cpSync(from, to, {
    recursive: true,
    dereference: true,
    filter: (src) => {
      const rel = relative(ROOT, src).split('\\').join('/');
      if (otherPlatform(rel)) return false;
      if (/\/node_modules$/.test(rel) && rel !== relative(ROOT, from)) return false; // nested deps are copied on their own
      return !(statSync(src).isFile() && droppable(src.split('/').pop()!));
    },
  });
}

const LAUNCHER = `#!/bin/sh
# distvae, portable: runs the bundled Node.js on the bundled package, whatever node the system has (or
# none). Shell built-ins only (a PATH without coreutils works); readlink, where there is one, follows a
# symbolic link to this launcher.
self=$0
if command -v readlink >/dev/null 2>&1; then self=$(readlink -f "$0" 2>/dev/null || echo "$0"); fi
case "$self" in */*) dir=\${self%/*} ;; *) dir=. ;; esac
here=$(cd "$dir/.." && pwd -P)
exec "$here/node/bin/node" "$here/lib/distvae/bin/distvae.js" "$@"
`;

function gitCommit(): string | null {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

/** Builds the bundle's folder under `staging`/distvae and returns its path. */
export function stageBundle(staging: string, log: (line: string) => void = () => {}): string {
  const top = join(staging, 'distvae');
  const lib = join(top, 'lib', 'distvae');
  mkdirSync(join(top, 'bin'), { recursive: true });
  mkdirSync(join(top, 'node', 'bin'), { recursive: true });
  mkdirSync(join(lib, 'bin'), { recursive: true });
  log('compiling the package (tsc -p tsconfig.build.json)');
  const tsc = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json', '--outDir', join(lib, 'dist')],
    { cwd: ROOT, encoding: 'utf8' },
  );
  if (tsc.status !== 0) throw new Error(`tsc failed: ${tsc.stdout}${tsc.stderr}`);
  for (const f of walk(join(lib, 'dist'))) if (droppable(f)) rmSync(f);
  cpSync(join(ROOT, 'package.json'), join(lib, 'package.json'));
  cpSync(join(ROOT, 'bin', 'distvae.js'), join(lib, 'bin', 'distvae.js'));
  const packages = runtimePackages();
  log(`copying ${packages.length} runtime packages`);
  for (const rel of packages) copyFiltered(join(ROOT, rel), join(lib, rel));
  cpSync(process.execPath, join(top, 'node', 'bin', 'node'));
  writeFileSync(join(top, 'bin', 'distvae'), LAUNCHER);
  chmodSync(join(top, 'bin', 'distvae'), 0o755);
  const pkg = readPackage(ROOT);
  writeFileSync(
    join(top, 'BUILD.json'),
    JSON.stringify(
      {
        package: `${pkg.name}@${pkg.version}`,
        commit: gitCommit(),
        node: process.version,
        platform: 'linux-x64',
        built: new Date().toISOString(),
      },
      null,
      2,
    ) + '\n',
  );
  return top;
}

function* walk(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else yield p;
  }
}

/** Writes `out` (tar + xz on every core) from a staged bundle; returns its size in bytes. */
export function packBundle(staging: string, out: string): number {
  const r = spawnSync('sh', ['-c', 'tar -C "$1" -cf - distvae | xz -T0 -6 > "$2"', 'pack', staging, out], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`tar | xz failed (${r.status})`);
  return statSync(out).size;
}

async function main(): Promise<void> {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error(`the bundle is linux-x64; this is ${process.platform}-${process.arch}`);
  const { values } = parseArgs({ options: { out: { type: 'string' }, 'keep-staging': { type: 'string' } } });
  const out = resolve(values.out ?? join(ROOT, 'distvae-linux-x64.tar.xz'));
  const staging = values['keep-staging'] ? resolve(values['keep-staging']) : mkdtempSync(join(tmpdir(), 'distvae-bundle-'));
  try {
    stageBundle(staging, (l) => console.log(`bundle: ${l}`));
    const bytes = packBundle(staging, out);
    console.log(`bundle: ${out} ${(bytes / 2 ** 20).toFixed(1)} MiB`);
    if (bytes > MAX_BUNDLE_BYTES) throw new Error(`the bundle is ${bytes} bytes, over the ${MAX_BUNDLE_BYTES} allowed`);
  } finally {
    if (!values['keep-staging']) rmSync(staging, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
