// A coordinator process for the orphan tests: starts a 2-rank process group, keeps a run in
// flight — rank 0 waiting on a message ('hang') or holding its thread as a decoder call does
// ('block', argv[2]) — and prints the rank pids as JSON once rank 0 is in that state, until it
// is killed.

import { localGroup } from '../local/index.js';
import { PROGRAMS, type Fault } from './programs.js';

const kind = process.argv[2] === 'block' ? 'block' : 'hang';
const group = localGroup({ ranks: 2, isolation: 'process', threadsPerRank: 1 });
await group.start();
let printed = false;
void group
  .run(PROGRAMS.fault, () => ({ rank: 0, kind }) satisfies Fault, {
    onPost: (rank) => {
      if (rank !== 0 || printed) return;
      printed = true;
      // The blocking rank posts, then blocks after a moment.
      setTimeout(() => process.stdout.write(JSON.stringify(group.pids()) + '\n'), kind === 'block' ? 500 : 0);
    },
  })
  .catch(() => undefined);
setInterval(() => undefined, 60_000);
