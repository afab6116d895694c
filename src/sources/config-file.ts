// Reads a diffusers `config.json` (a file, or a folder holding one) into a raw config object.

import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DistVaeError, reason } from '../errors.js';
import type { RawConfig } from '../families/types.js';

export function readConfigJson(path: string): RawConfig {
  const file = existsSync(path) && statSync(path).isDirectory() ? join(path, 'config.json') : path;
  if (!existsSync(file)) {
    const r = reason('FILE_NOT_FOUND', 'config', file, 'an existing config.json', `config file not found: ${file}`);
    throw new DistVaeError('FILE_NOT_FOUND', r.message, { reasons: [r] });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    const r = reason('CONFIG_NOT_JSON', 'config', file, 'a JSON object', `config file ${file} is not valid JSON: ${(e as Error).message}`);
    throw new DistVaeError('FILE_INVALID', r.message, { reasons: [r] });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    const r = reason('CONFIG_NOT_OBJECT', 'config', file, 'a JSON object', `config file ${file} must hold a JSON object`);
    throw new DistVaeError('FILE_INVALID', r.message, { reasons: [r] });
  }
  return parsed as RawConfig;
}
