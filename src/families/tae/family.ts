// The TAE family as the registry lists it: its declaration and its runtime.

import type { Family } from '../runtime-types.js';
import { taeRuntime } from './runtime.js';
import { tae } from './spec.js';

export const taeFamily = { spec: tae, runtime: taeRuntime } satisfies Family;
