// The rank-group conformance suite on child-process ranks.
import { groupConformance } from '../conformance.js';
import { localGroup } from '../local.js';

groupConformance('local processes', 'process', (options) => localGroup({ ...options, isolation: 'process' }));
