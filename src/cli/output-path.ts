// Checks an output path before any work starts: its folder exists and this process may write
// there, and it is none of the command's input files (writing would overwrite what it reads).
// A decode of minutes that fails only when it writes, or that replaces its own latents, is the
// mistake this prevents.

import { closeSync, existsSync, openSync, realpathSync, statSync, unlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Args } from './args.js';

/** The path with symbolic links resolved where it exists (its folder's otherwise). */
function canonical(path: string): string {
  const absolute = resolve(path);
  if (existsSync(absolute)) return realpathSync(absolute);
  const folder = dirname(absolute);
  return existsSync(folder) ? resolve(realpathSync(folder), absolute.slice(folder.length + 1)) : absolute;
}

/** Records refusals on `args` for an output `--out` that cannot be written or that names one of `inputs` (option name → path). */
export function checkOutputPath(args: Args, out: string, inputs: Readonly<Record<string, string | undefined>>): void {
  const folder = dirname(resolve(out));
  if (!existsSync(folder) || !statSync(folder).isDirectory()) {
    args.refuse('--out', out, 'a path in an existing folder', `--out ${out}: the folder ${folder} does not exist`);
    return;
  }
  try {
    // A real create, not access(2): root passes W_OK checks on read-only and pseudo file systems.
    const probe = join(folder, `.distvae-write-check-${process.pid}`);
    closeSync(openSync(probe, 'wx'));
    unlinkSync(probe);
  } catch {
    args.refuse('--out', out, 'a path in a folder this process may write', `--out ${out}: the folder ${folder} is not writable`);
    return;
  }
  if (existsSync(out) && statSync(out).isDirectory()) {
    args.refuse('--out', out, 'a file path', `--out ${out} is a folder, not a file`);
    return;
  }
  const target = canonical(out);
  for (const [option, input] of Object.entries(inputs)) {
    if (input !== undefined && canonical(input) === target) {
      args.refuse('--out', out, `a path other than --${option}`, `--out ${out} is the --${option} file: writing would overwrite the input`);
    }
  }
}

/**
 * Records one refusal when any of `outputs` (one per input, from --out-dir) is one of the latent
 * files `inputs` the decode reads: `--out-dir` over the latents' own folder with their format
 * would replace each input with its decode.
 */
export function checkOutputsAgainstInputs(args: Args, outDir: string, outputs: readonly string[], inputs: readonly string[]): void {
  const read = new Set(inputs.map(canonical));
  const clash = outputs.filter((o) => read.has(canonical(o)));
  if (clash.length > 0) {
    args.refuse(
      '--out-dir',
      outDir,
      'a folder whose outputs are not the --latents files',
      `--out-dir ${outDir} would write ${clash.length} output(s) over the --latents files they decode (${clash.slice(0, 3).join(', ')}${clash.length > 3 ? ', ...' : ''}): pick another folder or --out-format`,
    );
  }
}
