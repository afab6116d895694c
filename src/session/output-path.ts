// The refusals of an output path, found before any work starts: its folder exists and this process may write
// there, and it is none of the command's input files (writing would overwrite what it reads).
// A decode of minutes that fails only when it writes, or that replaces its own latents, is the
// mistake this prevents.

import { closeSync, existsSync, openSync, realpathSync, statSync, unlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { reason, type Reason } from '../errors.js';
import type { OptionLabels } from './options.js';

/** The path with symbolic links resolved where it exists (its folder's otherwise). */
function canonical(path: string): string {
  const absolute = resolve(path);
  if (existsSync(absolute)) return realpathSync(absolute);
  const folder = dirname(absolute);
  return existsSync(folder) ? resolve(realpathSync(folder), absolute.slice(folder.length + 1)) : absolute;
}

/** The refusals of an output `out` that cannot be written or that names one of `inputs` (option → path). */
export function outputPathReasons(
  out: string,
  inputs: Readonly<Partial<Record<'latents' | 'vae' | 'configPath', string>>>,
  label: OptionLabels,
): Reason[] {
  const refused = (valid: string, message: string) => [reason('INVALID_ARGUMENT', label('out'), out, valid, message)];
  const folder = dirname(resolve(out));
  if (!existsSync(folder) || !statSync(folder).isDirectory()) {
    return refused('a path in an existing folder', `${label('out')} ${out}: the folder ${folder} does not exist`);
  }
  try {
    // A real create, not access(2): root passes W_OK checks on read-only and pseudo file systems.
    const probe = join(folder, `.distvae-write-check-${process.pid}`);
    closeSync(openSync(probe, 'wx'));
    unlinkSync(probe);
  } catch {
    return refused('a path in a folder this process may write', `${label('out')} ${out}: the folder ${folder} is not writable`);
  }
  if (existsSync(out) && statSync(out).isDirectory()) return refused('a file path', `${label('out')} ${out} is a folder, not a file`);
  const target = canonical(out);
  return (Object.entries(inputs) as ['latents' | 'vae' | 'configPath', string | undefined][])
    .filter(([, input]) => input !== undefined && canonical(input) === target)
    .flatMap(([option]) =>
      refused(
        `a path other than ${label(option)}`,
        `${label('out')} ${out} is the ${label(option)} file: writing would overwrite the input`,
      ),
    );
}

/**
 * One refusal when any of `outputs` (one per input, from outDir) is one of the latent files
 * `inputs` the decode reads: outDir over the latents' own folder with their format would replace
 * each input with its decode.
 */
export function outputsOverInputsReasons(
  outDir: string,
  outputs: readonly string[],
  inputs: readonly string[],
  label: OptionLabels,
): Reason[] {
  const read = new Set(inputs.map(canonical));
  const clash = outputs.filter((o) => read.has(canonical(o)));
  if (clash.length === 0) return [];
  return [
    reason(
      'INVALID_ARGUMENT',
      label('outDir'),
      outDir,
      `a folder whose outputs are not the ${label('latents')} files`,
      `${label('outDir')} ${outDir} would write ${clash.length} output(s) over the ${label('latents')} files they decode (${clash.slice(0, 3).join(', ')}${clash.length > 3 ? ', ...' : ''}): pick another folder or ${label('outFormat')}`,
    ),
  ];
}
