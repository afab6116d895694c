// Reads a diffusers `config.json` (a file, or a folder holding one) into a raw config object.

import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { reason, refuse } from '../errors.js';
import { refuseIfNotRegular } from '../bytes/file-source.js';
import type { RawConfig } from '../families/types.js';

/** The largest config.json read (published ones are a few KiB): a bigger one, a device or a pipe is refused unread. */
export const MAX_CONFIG_BYTES = 16 * 2 ** 20;

/** Reads a diffusers config.json (a file, or a folder holding one, a regular file of at most MAX_CONFIG_BYTES); FILE_NOT_FOUND / FILE_INVALID / CONFIG_INVALID with the reason. */
export function readConfigJson(path: string): RawConfig {
  const file = existsSync(path) && statSync(path).isDirectory() ? join(path, 'config.json') : path;
  if (!existsSync(file)) {
    refuse('FILE_NOT_FOUND', reason('FILE_NOT_FOUND', 'config', file, 'an existing config.json', `config file not found: ${file}`));
  }
  const stats = statSync(file);
  refuseIfNotRegular(file, stats);
  if (stats.size > MAX_CONFIG_BYTES) {
    refuse(
      'FILE_INVALID',
      reason(
        'INPUT_TOO_LARGE',
        'config',
        file,
        `a config file of at most ${MAX_CONFIG_BYTES} bytes`,
        `config file ${file} is ${stats.size} bytes; a config.json is a few KiB`,
      ),
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    refuse(
      'FILE_INVALID',
      reason('CONFIG_NOT_JSON', 'config', file, 'a JSON object', `config file ${file} is not valid JSON: ${(e as Error).message}`),
    );
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    refuse('FILE_INVALID', reason('CONFIG_NOT_OBJECT', 'config', file, 'a JSON object', `config file ${file} must hold a JSON object`));
  }
  return parsed as RawConfig;
}
