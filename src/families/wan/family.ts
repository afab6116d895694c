// The Wan family as the registry lists it: its declaration and its runtime.

import type { Family } from '../runtime-types.js';
import { wanRuntime } from './runtime.js';
import { wan } from './spec.js';

export const wanFamily = { spec: wan, runtime: wanRuntime } satisfies Family;
