// Test support: an `ffmpeg` that writes part of its output and then stalls without reading its
// input — the encoder an interrupt must kill (a real one would finish the file from what it was
// given). It answers `-version` as the real one does, so it passes the CLI's check; it records
// its pid, which it keeps (exec), next to itself.

import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface StallingFfmpeg {
  /** Folder holding the script as `ffmpeg` (put it first on PATH). */
  bin: string;
  /** The running encoder's pid, once it has written its partial output. */
  pid(): number | null;
}

export function stallingFfmpeg(dir: string): StallingFfmpeg {
  const bin = join(dir, 'stalling-ffmpeg');
  mkdirSync(bin, { recursive: true });
  const pidFile = join(bin, 'pid');
  writeFileSync(
    join(bin, 'ffmpeg'),
    [
      '#!/bin/sh',
      '[ "$1" = "-version" ] && { echo "ffmpeg version stalling"; exit 0; }',
      'for last; do :; done',
      'echo partial > "$last"',
      `echo $$ > "${pidFile}"`,
      'exec sleep 120',
      '',
    ].join('\n'),
  );
  chmodSync(join(bin, 'ffmpeg'), 0o755);
  return { bin, pid: () => (existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) || null : null) };
}
