// The code blocks of the README and the docs pages, as the snippet test checks them: fenced
// `ts` blocks (type-checked against the package's public entries, run where they need no
// external file) and `sh` blocks, whose `distvae` / `npx distvae` / `npm run` lines are parsed
// against the CLI's own option tables (never run). Context a page sets up in prose — a loaded
// `vae`, its `latents`, a page's canvas `ctx` and a weights `fileOrUrl` — is the only thing a
// block may use without defining it (SNIPPET_CONTEXT); anything else undefined fails.

import { parseCommandArgs, type CommandSpec } from '../../src/cli/args.js';

/** One fenced code block: its language, text, and where it starts (file:line). */
export interface Snippet {
  lang: string;
  code: string;
  file: string;
  line: number;
}

/** Names a block may use without defining them, with their types (what the prose says they are). */
export const SNIPPET_CONTEXT: Readonly<Record<string, string>> = {
  vae: "import('distvae').Vae",
  latents: "import('distvae').Tensor",
  ctx: 'CanvasRenderingContext2D',
  fileOrUrl: 'string | File',
};

/** The fenced blocks of a Markdown text (indented fences inside list items included). */
export function extractSnippets(markdown: string, file: string): Snippet[] {
  const out: Snippet[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]!); j++)
      body.push(lines[j]!.slice(Math.min(indent, /^\s*/.exec(lines[j]!)![0].length)));
    out.push({ lang: open[2]!, code: body.join('\n'), file, line: i + 1 });
    i = j;
  }
  return out;
}

/** Shell words of one command line: quotes removed, `#` comments and `[optional]` brackets dropped. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      if (end < 0) throw new Error(`unclosed ${c} in: ${line}`);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '#' && word === null) break;
    else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else if ((c === '[' || c === ']') && word === null) continue;
    else if (c === ']' && i === line.length - 1) continue;
    else if (c === ']' && /\s/.test(line[i + 1] ?? ' ')) continue;
    else word = (word ?? '') + c;
  }
  if (word !== null) words.push(word);
  return words;
}

/** The commands of an `sh` block: continuation lines joined, `&&` / `;` split, `VAR=value` prefixes dropped. */
export function shellCommands(code: string): string[][] {
  const joined = code.replace(/\\\n\s*/g, ' ');
  const commands: string[][] = [];
  for (const line of joined.split('\n')) {
    const words = shellWords(line);
    let current: string[] = [];
    for (const w of [...words, '&&']) {
      if (w === '&&' || w === ';' || w === '||') {
        while (current.length > 0 && /^[A-Z_][A-Z0-9_]*=/.test(current[0]!)) current.shift();
        if (current.length > 0) commands.push(current);
        current = [];
      } else current.push(w);
    }
  }
  return commands;
}

/**
 * What is wrong with one shell command, or null: a `distvae` command must name a command of the
 * CLI and parse with its options (unknown options, a value missing, one given twice); `npm run X`
 * must name a script of package.json, and `npm run demo -- …` passes `…` to `distvae demo`.
 */
export function checkShellCommand(
  words: string[],
  commands: readonly CommandSpec[],
  scripts: Readonly<Record<string, string>>,
): string | null {
  let argv: string[] | null = null;
  if (words[0] === 'npx' && words[1] === 'distvae') argv = words.slice(2);
  else if (words[0] === 'distvae') argv = words.slice(1);
  else if (words[0] === 'npm' && words[1] === 'run') {
    const script = words[2];
    if (script === undefined || scripts[script] === undefined) return `npm run ${script}: package.json has no such script`;
    const cli = /^tsx src\/cli\/main\.ts (\S+)$/.exec(scripts[script]!);
    if (cli && words[3] === '--') argv = [cli[1]!, ...words.slice(4)];
  }
  if (argv === null) return null;
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '--version') return null;
  const spec = commands.find((c) => c.name === argv![0]);
  if (!spec) return `distvae ${argv[0]}: no such command (${commands.map((c) => c.name).join(', ')})`;
  try {
    parseCommandArgs(spec, argv.slice(1));
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

/** Free names a `ts` block uses from SNIPPET_CONTEXT (whole words not defined in the block). */
export function contextNames(code: string): string[] {
  return Object.keys(SNIPPET_CONTEXT).filter(
    (name) => new RegExp(`\\b${name}\\b`).test(code) && !new RegExp(`\\b(const|let|var|function)\\s+${name}\\b`).test(code),
  );
}

/**
 * Whether a `ts` block can run here: not a page's code (distvae/web needs a browser), no string
 * naming a file or a placeholder path (a model, latents, an output), no Redis.
 */
export function runsHere(code: string): boolean {
  if (/from 'distvae\/web'/.test(code)) return false;
  if (/'[^']*\.(npy|safetensors|pth|png|jpe?g|json|latent|mp4|webm)'/.test(code)) return false;
  if (/'(path\/to\/|org\/)|redis:\/\//.test(code)) return false;
  return !contextNames(code).some((n) => n === 'ctx' || n === 'fileOrUrl');
}
