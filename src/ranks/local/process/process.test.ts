// The rank-group and tile-decode conformance suites on child-process ranks.
import { after } from 'node:test';
import { groupConformance, sharedGroups } from '../../testing/group-conformance.js';
import { localGroup } from '../index.js';
import { localTileFaults, tileConformance } from '../../../strategies/tile/testing/tile-conformance.js';

const shared = sharedGroups((ranks) => localGroup({ ranks, isolation: 'process', threadsPerRank: 1 }));
after(() => shared.closeAll());
groupConformance('local processes', 'process', shared.get, (options) => localGroup({ ...options, isolation: 'process' }));
tileConformance('local processes', shared.get);
localTileFaults('local processes', 'process', shared.get);
