// The MiniMax-H3 video VAE family as the registry lists it: its declaration and its runtime.

import type { Family } from '../runtime-types.js';
import { miniMaxH3Runtime } from './runtime.js';
import { miniMaxH3 } from './spec.js';

export const miniMaxH3Family = { spec: miniMaxH3, runtime: miniMaxH3Runtime } satisfies Family;
