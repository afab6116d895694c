// The docs run (issue 30 item 7): every fenced block of README.md and docs/pages/**.md is
// checked. `sh` lines naming distvae (or `npm run`) parse against the CLI's own option tables;
// `ts` blocks type-check against the package's public entries ('distvae', 'distvae/web', …,
// mapped to src/ as tsconfig.json does), with only the context the prose sets up declared
// (SNIPPET_CONTEXT), and run where they need no external file — with a loaded tiny synthetic
// VAE and a seeded latent as their `vae` and `latents`. The quick start's own example file runs
// in docs/examples/quick-start.test.ts, `npm run demo` in src/cli/commands/demo.test.ts.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { COMMANDS } from '../../src/cli/main.js';
import { checkShellCommand, contextNames, extractSnippets, runsHere, shellCommands, SNIPPET_CONTEXT, type Snippet } from './snippets.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const OUT = join(ROOT, 'test-output/snippets');
const SCRIPTS = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? markdownFiles(path) : name.endsWith('.md') ? [path] : [];
  });
}

const snippets: Snippet[] = [join(ROOT, 'README.md'), ...markdownFiles(join(ROOT, 'docs/pages'))].flatMap((path) =>
  extractSnippets(readFileSync(path, 'utf8'), relative(ROOT, path)),
);
const where = (s: Snippet) => `${s.file}:${s.line}`;
const stem = (s: Snippet) => `${s.file.replace(/[^\w]+/g, '-')}-${s.line}`;

test('the checks fail where they should: an unknown option, a missing script, an undefined name', () => {
  assert.match(checkShellCommand(['npx', 'distvae', 'decode', '--windw', '512x512'], COMMANDS, SCRIPTS)!, /--windw/);
  assert.match(checkShellCommand(['distvae', 'decodee'], COMMANDS, SCRIPTS)!, /no such command/);
  assert.match(checkShellCommand(['npm', 'run', 'nope'], COMMANDS, SCRIPTS)!, /no such script/);
  assert.match(checkShellCommand(['npm', 'run', 'demo', '--', '--bogus'], COMMANDS, SCRIPTS)!, /--bogus/);
  assert.equal(
    checkShellCommand(['npx', 'distvae', 'plan', '--family', 'tae', '--height', '64', '--width', '64'], COMMANDS, SCRIPTS),
    null,
  );
  assert.deepEqual(shellCommands("A=1 npx distvae worker --redis 'redis://:x@h:1' [--device 0] # note\nnpm test && npm pack"), [
    ['npx', 'distvae', 'worker', '--redis', 'redis://:x@h:1', '--device', '0'],
    ['npm', 'test'],
    ['npm', 'pack'],
  ]);
  assert.deepEqual(contextNames('const sample = await vae.decode(latents, { signal });'), ['vae', 'latents']);
  assert.equal(runsHere("const vae = await loadVae('path/to/vae');"), false);
});

test('every distvae command line in the README and the docs parses with the CLI’s options', () => {
  const problems: string[] = [];
  let checked = 0;
  for (const s of snippets.filter((s) => s.lang === 'sh' || s.lang === 'bash')) {
    for (const words of shellCommands(s.code)) {
      const problem = checkShellCommand(words, COMMANDS, SCRIPTS);
      if (/^(npx )?distvae|^npm run/.test(words.join(' '))) checked++;
      if (problem) problems.push(`${where(s)}: ${words.join(' ')}\n    ${problem}`);
    }
  }
  assert.ok(checked >= 15, `${checked} command lines checked`);
  assert.deepEqual(problems, []);
});

const tsSnippets = snippets.filter((s) => s.lang === 'ts' || s.lang === 'typescript');

test('every ts block of the README and the docs type-checks against the public entries', () => {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const context = Object.entries(SNIPPET_CONTEXT)
    .map(([name, type]) => `  const ${name}: ${type};`)
    .join('\n');
  writeFileSync(join(OUT, 'context.d.ts'), `// What the prose sets up before a block.\ndeclare global {\n${context}\n}\nexport {};\n`);
  const files = tsSnippets.map((s) => {
    const path = join(OUT, `${stem(s)}.ts`);
    writeFileSync(path, `${s.code}\nexport {};\n`);
    return path;
  });
  assert.ok(files.length >= 6, `${files.length} ts blocks`);
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'docs/tsconfig.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
  )!;
  const program = ts.createProgram([...files, join(OUT, 'context.d.ts')], {
    ...config.options,
    noEmit: true,
    // A block shows a call; a name it binds and does not use again is no mistake.
    noUnusedLocals: false,
  });
  const diagnostics = ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file && d.file.fileName.startsWith(OUT))
    .map((d) => {
      const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
      const s = tsSnippets[files.indexOf(resolve(d.file!.fileName))];
      return `${s ? `${s.file}:${s.line + 1 + line}` : d.file!.fileName}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
  assert.deepEqual(diagnostics, []);
});

// What stands in for the context a block uses: a tiny AutoencoderKL (ratio 8) with seeded
// weights, and a latent it decodes in a moment.
function prelude(code: string): string {
  const used = contextNames(code);
  return [
    "import { loadVae as __loadVae, seededTensor as __seededTensor } from 'distvae';",
    used.includes('vae')
      ? "const vae = await __loadVae({ config: { _class_name: 'AutoencoderKL', block_out_channels: [8, 8, 8, 8], layers_per_block: 1, norm_num_groups: 4, latent_channels: 4 }, weights: 'synthetic', seed: 0 }, { threads: 1 });"
      : '',
    used.includes('latents') ? 'const latents = __seededTensor([1, 4, 32, 32], 1);' : '',
    'void __loadVae; void __seededTensor;',
    '',
  ].join('\n');
}

for (const s of tsSnippets.filter((s) => runsHere(s.code))) {
  test(`the ts block at ${where(s)} runs`, () => {
    mkdirSync(OUT, { recursive: true });
    const path = join(OUT, `run-${stem(s)}.ts`);
    writeFileSync(path, `${prelude(s.code)}${s.code}\n`);
    const run = spawnSync(process.execPath, ['--import', 'tsx', path], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
    assert.equal(run.status, 0, `${where(s)} exited with ${run.status ?? run.signal}:\n${run.stderr.slice(-2000)}`);
  });
}
