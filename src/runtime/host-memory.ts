// The memory and cores of the machine sessions run on, for refusals that must come before a run (a
// whole-image attention that cannot fit) and for the time model (local ranks share the cores). package.json's `browser` map replaces this module
// with web-host-memory.ts in a page.

import { availableParallelism, totalmem } from 'node:os';

/** Physical memory of this machine in bytes. */
export function hostMemoryBytes(): number {
  return totalmem();
}

/** CPU cores this process may run on (local ranks on one machine share them). */
export function hostCores(): number {
  return availableParallelism();
}
