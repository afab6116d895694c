// The package's version, read once from its package.json (one folder above src/ or dist/), so
// outputs can say which distvae wrote them.

import { readFileSync } from 'node:fs';

/** This package's version, from package.json. */
export const DISTVAE_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
