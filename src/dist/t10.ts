import { localGroup } from './local.js';
import { PROGRAMS } from './testing/programs.js';
for (const isolation of ['thread', 'process'] as const) {
  for (const ranks of [1, 3]) {
    const t = performance.now();
    const g = localGroup({ ranks, isolation, threadsPerRank: 1 });
    await g.start();
    const t1 = performance.now();
    await g.run(PROGRAMS.identity, Array(ranks).fill(0));
    console.log(isolation, ranks, 'start', (t1 - t).toFixed(0), 'first run', (performance.now() - t1).toFixed(0));
    await g.close();
  }
}
