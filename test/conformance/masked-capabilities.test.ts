// Self-test of the suite's "missing capability" branches and of the façades' capability
// checks: memory:// with every optional capability masked off on the driver instance must
// refuse fanout, requeue, pools and call monitoring at once with NotSupportedError.
import type { DriverCapabilities } from '../../src/driver/capabilities.js';
import { getMemoryBroker } from '../../src/drivers/memory/index.js';
import { TransportURL, type Transport } from '../../src/index.js';
import { uniqueName } from '../support/wait.js';
import { runConformanceSuite } from './suite.js';

const MASKED: DriverCapabilities = Object.freeze({ rpc: true, fanout: false, requeue: false, pools: false, callMonitor: false, durableNotifications: false });

runConformanceSuite({
  name: 'memory with optional capabilities masked off',
  url: () => `memory:///${uniqueName('masked')}`,
  capabilities: MASKED,
  async publishRaw(url, exchange, routingKey, body) {
    getMemoryBroker(TransportURL.parse(url).virtualHost ?? '').publishRaw(exchange, routingKey, body);
  },
  onTransport(transport: Transport) {
    Object.defineProperty(transport.driver, 'capabilities', { value: MASKED });
  },
});
