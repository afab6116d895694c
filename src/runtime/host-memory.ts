// The memory of the machine sessions run on, for refusals that must come before a run (a
// whole-image attention that cannot fit). package.json's `browser` map replaces this module
// with web-host-memory.ts in a page.

import { totalmem } from 'node:os';

/** Physical memory of this machine in bytes. */
export function hostMemoryBytes(): number {
  return totalmem();
}
