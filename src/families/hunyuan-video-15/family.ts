// The HunyuanVideo 1.5 VAE family as the registry lists it: its declaration and its runtime.

import type { Family } from '../runtime-types.js';
import { hunyuanVideo15Runtime } from './runtime.js';
import { hunyuanVideo15 } from './spec.js';

export const hunyuanVideo15Family = { spec: hunyuanVideo15, runtime: hunyuanVideo15Runtime } satisfies Family;
