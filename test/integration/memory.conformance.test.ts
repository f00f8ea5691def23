// The conformance suite against the embedded memory:// broker; each test gets its own vhost.
import { runConformanceSuite } from '../conformance/suite.js';
import { uniqueName } from '../support/wait.js';

runConformanceSuite({
  name: 'memory',
  url: () => `memory:///${uniqueName('conf')}`,
  capabilities: { rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true },
});
