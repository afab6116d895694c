// The child processes a decode may have started in this process — rank processes and ffmpeg
// encoders — ended at once, for a process that must exit now (a second Ctrl-C, a fatal error).
// An aborted decode ends its own children; this is for when there is no time to wait for it.

import { killVideoEncoders } from '../io/video.js';
import { killRankProcesses } from '../ranks/local/process/process-host.js';

/** Kills every rank process and ffmpeg encoder this process started (SIGKILL) and removes their partial outputs. */
export function killChildProcesses(): void {
  killRankProcesses();
  killVideoEncoders();
}
