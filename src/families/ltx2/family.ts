// The LTX-2 family as the registry lists it: its declaration and its runtime.

import type { Family } from '../runtime-types.js';
import { ltx2Runtime } from './runtime.js';
import { ltx2 } from './spec.js';

export const ltx2Family = { spec: ltx2, runtime: ltx2Runtime } satisfies Family;
