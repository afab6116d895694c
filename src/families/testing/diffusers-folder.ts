// Test helper: diffusers folders (config.json + diffusion_pytorch_model.safetensors) written
// from weights a test made, in temp folders removed after the test file, and a one-shot decode
// of whatever loadVae takes.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { loadVae, type Vae } from '../../decode/vae.js';
import { DIFFUSERS_WEIGHTS_FILE } from '../../sources/vae-source.js';
import type { Tensor } from '../../tensor.js';
import { writeSafetensors } from '../../weights/safetensors.js';
import type { RawConfig } from '../types.js';

/**
 * A writer of diffusers folders named `prefix…`; call it at a test file's top level (the
 * folders are removed after the file's tests). With `className`, config.json names it.
 */
export function diffusersFolderWriter(
  prefix: string,
  className?: string,
): (config: RawConfig, weights: ReadonlyMap<string, Tensor>) => string {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  return (config, weights) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    writeFileSync(join(dir, 'config.json'), JSON.stringify(className !== undefined ? { _class_name: className, ...config } : config));
    writeSafetensors(join(dir, DIFFUSERS_WEIGHTS_FILE), weights);
    return dir;
  };
}

/** Loads a VAE (one thread), lets `prepare` set its plan, decodes `z` once and disposes of it. */
export async function decodeOnce(source: Parameters<typeof loadVae>[0], z: Tensor, prepare?: (vae: Vae) => void): Promise<Tensor> {
  const vae = await loadVae(source, { threads: 1 });
  try {
    prepare?.(vae);
    return await vae.decode(z);
  } finally {
    await vae.dispose();
  }
}
