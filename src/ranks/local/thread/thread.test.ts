// The rank-group and tile-decode conformance suites on worker-thread ranks.
import { after } from 'node:test';
import { groupConformance, sharedGroups } from '../../testing/group-conformance.js';
import { localGroup } from '../index.js';
import { localTileFaults, tileConformance } from '../../../strategies/tile/testing/tile-conformance.js';

const shared = sharedGroups((ranks) => localGroup({ ranks, isolation: 'thread', threadsPerRank: 1 }));
after(() => shared.closeAll());
groupConformance('local threads', 'thread', shared.get, (options) => localGroup({ ...options, isolation: 'thread' }));
tileConformance('local threads', shared.get);
localTileFaults('local threads', 'thread', shared.get);
