// The AutoencoderDC (SANA DC-AE) family as the registry lists it: its declaration and its runtime.

import type { Family } from '../runtime-types.js';
import { dcaeRuntime } from './runtime.js';
import { dcae } from './spec.js';

export const dcaeFamily = { spec: dcae, runtime: dcaeRuntime } satisfies Family;
