// The HunyuanVideo family as the registry lists it: its declaration and its runtime.

import type { Family } from '../runtime-types.js';
import { hunyuanVideoRuntime } from './runtime.js';
import { hunyuanVideo } from './spec.js';

export const hunyuanVideoFamily = { spec: hunyuanVideo, runtime: hunyuanVideoRuntime } satisfies Family;
