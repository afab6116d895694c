// The CLI reference, generated from the CLI's own `--help` output at build time: the top-level
// help names the commands, and each command's `distvae <command> --help` is captured verbatim.
// When the CLI source is not in the tree yet the page says so instead of guessing.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { escapeXml } from '../../src/bench/plan-figure.js';

export interface CliHelp {
  /** `distvae --help`, or null when the CLI source is absent. */
  top: string | null;
  commands: { name: string; help: string }[];
}

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runCli(root: string, args: string[]): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      cwd: root,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Command names from a top-level help text: the first word of each indented line (after a
 * leading `distvae`) in a section whose heading is `Commands:`, `Available commands:`,
 * `COMMANDS` or the like, up to the next unindented line.
 */
export function commandsFromHelp(help: string): string[] {
  const names: string[] = [];
  let inCommands = false;
  for (const line of help.split('\n')) {
    if (/^\S/.test(line)) {
      inCommands = /^[\w ]*commands?\s*:?\s*$/i.test(line);
      continue;
    }
    const m = /^\s+(?:distvae\s+)?([a-z][a-z0-9-]*)(\s|$)/.exec(line);
    if (inCommands && m && !names.includes(m[1]!)) names.push(m[1]!);
  }
  return names;
}

export async function readCliHelp(root: string): Promise<CliHelp> {
  if (!existsSync(join(root, 'src/cli/main.ts'))) return { top: null, commands: [] };
  const top = await runCli(root, ['--help']);
  const topText = (top.stdout || top.stderr).trimEnd();
  if (top.code !== 0 || topText.length === 0) {
    throw new Error(`distvae --help exited with code ${top.code}; the CLI reference cannot be generated:\n${top.stderr || top.stdout}`);
  }
  const names = commandsFromHelp(topText);
  const results = await Promise.all(names.map((name) => runCli(root, [name, '--help'])));
  const commands = names.flatMap((name, i) => {
    const r = results[i]!;
    const text = (r.stdout || r.stderr).trimEnd();
    // A word the parser took for a command but the CLI does not know is left out, not shown as an error.
    return r.code === 0 && text.length > 0 && text !== topText ? [{ name, help: text }] : [];
  });
  return { top: topText, commands };
}

export function renderCli(help: CliHelp): string {
  if (help.top === null) {
    return '<p class="notice">The CLI (<code>src/cli/main.ts</code>) is not part of this build yet, so there is no help to show. This page is generated from <code>distvae --help</code> and <code>distvae &lt;command&gt; --help</code> as soon as it is.</p>';
  }
  const contents = help.commands.map((c) => `<li><a href="#cli-${c.name}"><code>distvae ${c.name}</code></a></li>`).join('');
  const sections = help.commands.map(
    (c) =>
      `<section id="cli-${c.name}"><h2><code>distvae ${c.name}</code></h2><pre class="cli-help"><code>${escapeXml(c.help)}</code></pre></section>`,
  );
  return `<section id="cli-top"><h2><code>distvae --help</code></h2><pre class="cli-help"><code>${escapeXml(help.top)}</code></pre></section>${contents ? `<nav aria-label="Commands"><ul>${contents}</ul></nav>` : ''}${sections.join('')}`;
}
