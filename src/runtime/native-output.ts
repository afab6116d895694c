// What the native layers under onnxruntime's GPU providers write to the terminal on their own,
// and whether a user sees it. Dawn (the WebGPU implementation onnxruntime-node bundles) prints
// its warnings with fprintf(stderr) — "Warning: maxDynamicUniformBuffersPerPipelineLayout
// artificially reduced…" each time a process opens its device, "Warning: vkCreateInstance: Found
// no drivers!" with a source-location line where there is no driver — and so do the Vulkan
// loader ("ERROR: [Loader Message] …") and Mesa ("WARNING: lavapipe is not a conformant vulkan
// implementation…", "MESA-LOADER: …"). No onnxruntime log level or session option reaches them,
// so they are removed from the stderr of the processes that open GPU sessions (rank processes,
// the provider probe) line by line; in-process sessions (thread ranks) cannot be filtered.
// `showNativeOutput(true)` (the CLI's --verbose) lets them through, in this process and in every
// process it starts (the setting travels in the environment).

import type { Readable } from 'node:stream';

/** The environment variable that carries the setting to child processes ('1': shown). */
export const NATIVE_OUTPUT_ENV = 'DISTVAE_NATIVE_OUTPUT';

/** Shows (true) or hides (false, the default) the GPU drivers' own lines, here and in the processes started from now on. */
export function showNativeOutput(show: boolean): void {
  if (show) process.env[NATIVE_OUTPUT_ENV] = '1';
  else delete process.env[NATIVE_OUTPUT_ENV];
}

/** Whether the GPU drivers' own lines are shown. */
export function nativeOutputShown(): boolean {
  return process.env[NATIVE_OUTPUT_ENV] === '1';
}

const NATIVE_LINES: readonly RegExp[] = [
  // Dawn's log lines, and the source location it appends to a failed Vulkan call.
  /^(Warning|Error|Info|Debug): /,
  /^\s+at \S+ \(\S*dawn\S*:\d+\)\s*$/,
  // The Vulkan loader (1.3.2xx "ERROR: [Loader Message] Code 0 : …"; newer "WARNING | DRIVER: …").
  /^(ERROR|WARNING|INFO|DEBUG|PERF)(: \[Loader Message\]| *\| *[A-Z]+)/,
  // Mesa's drivers and loaders.
  /^WARNING: (lavapipe|.*not a conformant)/,
  /^(MESA|MESA-LOADER|libEGL|libGL|radv|ANV|NVK)[: ]/i,
];

/** Whether a line of stderr is one of the GPU drivers' own (Dawn, the Vulkan loader, Mesa). */
export function isNativeOutputLine(line: string): boolean {
  return NATIVE_LINES.some((pattern) => pattern.test(line));
}

/**
 * Copies a child process's stderr to `write` line by line, leaving out the GPU drivers' own lines
 * (and the blank line Dawn ends a located warning with) unless they are shown.
 */
export function forwardFilteredStderr(stderr: Readable, write: (text: string) => void, show = nativeOutputShown()): void {
  let pending = '';
  let afterNative = false;
  const emit = (line: string) => {
    const native = !show && (isNativeOutputLine(line) || (afterNative && line.trim() === ''));
    afterNative = native && line.trim() !== '';
    if (!native) write(`${line}\n`);
  };
  stderr.setEncoding('utf8');
  stderr.on('data', (chunk: string) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop()!;
    lines.forEach(emit);
  });
  stderr.on('end', () => {
    if (pending !== '') emit(pending);
    pending = '';
  });
}
