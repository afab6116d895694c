// What the video and memory tests read from outside this process: whether ffmpeg / ffprobe are
// installed, what ffprobe reads back from a written video, and the peak RSS of a script run in
// a fresh Node process (VmHWM, so a test can bound what streaming keeps in memory).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

/** ffmpeg and ffprobe are both on PATH. */
export const hasVideoTools = ['ffmpeg', 'ffprobe'].every((tool) => spawnSync(tool, ['-version'], { stdio: 'ignore' }).status === 0);

/** A test's `skip` option: false where the tools are installed, else the reason with the install hint. */
export const skipWithoutVideoTools: false | string = hasVideoTools
  ? false
  : 'ffmpeg/ffprobe not installed (apt-get install ffmpeg to run this test)';

/** ffprobe's view of the first video stream of `path`: the named `stream` entries (nb_read_frames counts decoded frames). */
export function probeVideo(path: string, entries: string[]): Record<string, string | number> {
  const args = [
    '-v',
    'error',
    '-count_frames',
    '-select_streams',
    'v:0',
    '-show_entries',
    `stream=${entries.join(',')}`,
    '-of',
    'json',
    path,
  ];
  const r = spawnSync('ffprobe', args, { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout).streams[0];
}

/** Printed last by the child: its peak RSS in MiB (aliased import: the script may import readFileSync itself). */
const PRINT_PEAK = `import { readFileSync as readStatus } from 'node:fs';
console.log(Number(/VmHWM:\\s+(\\d+) kB/.exec(readStatus('/proc/self/status', 'utf8'))[1]) / 1024);`;

/** Runs `script` (an ES module; TypeScript imports load through tsx) in a fresh Node process and returns its peak RSS in MiB. */
export function peakRssMiBOf(script: string): number {
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `${script}\n${PRINT_PEAK}`], {
    encoding: 'utf8',
  });
  assert.equal(child.status, 0, child.stderr);
  return Number(child.stdout.trim().split('\n').at(-1));
}
