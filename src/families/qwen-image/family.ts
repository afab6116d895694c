// The Qwen-Image (the Wan decoder, its own post-processing) family as the registry lists it: its declaration and its runtime.

import type { Family } from '../runtime-types.js';
import { qwenImageRuntime } from '../wan/runtime.js';
import { qwenImage } from './spec.js';

export const qwenImageFamily = { spec: qwenImage, runtime: qwenImageRuntime } satisfies Family;
