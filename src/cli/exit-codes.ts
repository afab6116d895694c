// The exit codes of `distvae` (docs/design.md §9): 0 success; 2 a refusal or bad input, made
// before work starts; 3 a runtime failure (a decoder call, a rank, the transport, a deadline or
// a fallback ladder failed); 1 an unexpected error (a bug); 130 / 143 after SIGINT / SIGTERM
// (130 too for a run stopped by its caller without a signal: ABORTED is no runtime failure).

import { isRuntimeFailure, type DistVaeError } from '../index.js';

export const EXIT = {
  ok: 0,
  internal: 1,
  refused: 2,
  failed: 3,
  sigint: 130,
  sigterm: 143,
} as const;

/**
 * The exit code that reports `error`: 3 for a runtime failure, 2 for a refusal, 130 for a run
 * stopped by its caller (ABORTED: an interrupt; after SIGTERM the CLI's process exits 143).
 */
export function exitCodeOf(error: DistVaeError): number {
  if (error.code === 'ABORTED') return EXIT.sigint;
  return isRuntimeFailure(error.code) ? EXIT.failed : EXIT.refused;
}
