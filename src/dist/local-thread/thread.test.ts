// The rank-group conformance suite on worker-thread ranks.
import { groupConformance } from '../conformance.js';
import { localGroup } from '../local.js';

groupConformance('local threads', 'thread', (options) => localGroup({ ...options, isolation: 'thread' }));
