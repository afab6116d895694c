// A coordinator process for the orphan test: starts a 2-rank process group, prints the rank
// pids as JSON, and keeps a run in flight until it is killed.

import { localGroup } from '../local/index.js';
import { PROGRAMS, type Fault } from './programs.js';

const group = localGroup({ ranks: 2, isolation: 'process', threadsPerRank: 1 });
await group.start();
void group.run(PROGRAMS.fault, () => ({ rank: 0, kind: 'hang' }) satisfies Fault).catch(() => undefined);
process.stdout.write(JSON.stringify(group.pids()) + '\n');
setInterval(() => undefined, 60_000);
