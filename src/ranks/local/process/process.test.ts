// The rank-group and tile-decode conformance suites on child-process ranks.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, test } from 'node:test';
import { groupConformance, sharedGroups } from '../../testing/group-conformance.js';
import { localGroup } from '../index.js';
import { localTileFaults, tileConformance } from '../../../strategies/tile/testing/tile-conformance.js';

const shared = sharedGroups((ranks) => localGroup({ ranks, isolation: 'process', threadsPerRank: 1 }));
after(() => shared.closeAll());
groupConformance('local processes', 'process', shared.get, (options) => localGroup({ ...options, isolation: 'process' }));
tileConformance('local processes', shared.get);
localTileFaults('local processes', 'process', shared.get);

// Issue 29: a default decode (whole on one rank process, PNG) ended "nothing was left to wait for"
// on a loaded machine. Its rank, idle after the decode and so no longer holding the event loop,
// outlived close()'s grace; the SIGKILL timer was then the last thing the loop waited on, and
// close() was left pending. A stopped rank (SIGSTOP: it never answers 'close') stands in for the
// slow one; the close must still settle, once the rank is gone. Its own process: the test
// runner's handles must not keep the loop alive for it.
test('close() settles when an idle rank outlives its grace and is killed', { skip: process.platform === 'win32' }, () => {
  const probe = `
    import { localGroup } from ${JSON.stringify(new URL('../index.ts', import.meta.url).href)};
    const group = localGroup({ ranks: 1, isolation: 'process', threadsPerRank: 1 });
    await group.start();
    const pid = group.pids()[0];
    process.kill(pid, 'SIGSTOP');
    let closed = false;
    process.once('beforeExit', () => { if (!closed) console.log('pending'); });
    await group.close();
    closed = true;
    let alive = true;
    try { process.kill(pid, 0); } catch { alive = false; }
    console.log(alive ? 'closed, rank alive' : 'closed');
  `;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', probe], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.stdout.trim(), 'closed', `stdout: ${run.stdout} stderr: ${run.stderr}`);
  assert.equal(run.status, 0);
});
