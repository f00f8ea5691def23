// The conformance suite against the embedded memory:// broker; each test gets its own vhost.
import { getMemoryBroker } from '../../src/drivers/memory/index.js';
import { TransportURL } from '../../src/index.js';
import { runConformanceSuite } from '../conformance/suite.js';
import { uniqueName } from '../support/wait.js';

runConformanceSuite({
  name: 'memory',
  url: () => `memory:///${uniqueName('conf')}`,
  capabilities: { rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true },
  async publishRaw(url, exchange, routingKey, body) {
    getMemoryBroker(TransportURL.parse(url).virtualHost ?? '').publishRaw(exchange, routingKey, body);
  },
});
