// A one-line progress bar on stderr for long decodes, drawn only when stderr is a terminal
// (quiet in pipes, logs and CI).

import { type DecodeProgress } from '../index.js';
import type { CliIO } from './args.js';

export function progressBar(io: CliIO, label: string): { update: (e: DecodeProgress) => void; finish: () => void } {
  if (!io.stderrIsTTY) return { update: () => {}, finish: () => {} };
  const started = Date.now();
  let drawn = false;
  const perRank = new Map<number, number>();
  return {
    update(e) {
      if (e.rank !== undefined) perRank.set(e.rank, (perRank.get(e.rank) ?? 0) + 1);
      const width = 30;
      const filled = Math.round((e.tilesDone / Math.max(1, e.tilesTotal)) * width);
      const ranks =
        perRank.size > 0
          ? `  ranks ${[...perRank.entries()]
              .sort((a, b) => a[0] - b[0])
              .map(([r, n]) => `${r}:${n}`)
              .join(' ')}`
          : '';
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      io.stderr(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${e.tilesDone}/${e.tilesTotal} tiles ${secs}s${ranks}`);
      drawn = true;
    },
    finish() {
      if (drawn) io.stderr('\n');
    },
  };
}
