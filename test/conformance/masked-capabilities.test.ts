// Self-test of the suite's "missing capability" branches and of the façades' capability
// checks: memory:// with every optional capability masked off on the driver instance must
// refuse fanout, requeue, pools and call monitoring at once with NotSupportedError.
import type { Transport } from 'tidings';
import type { DriverCapabilities } from 'tidings/driver';
import { memoryConformanceSubject, runConformanceSuite } from 'tidings/testing';

const MASKED: DriverCapabilities = Object.freeze({ rpc: true, fanout: false, requeue: false, pools: false, callMonitor: false, durableNotifications: false });

runConformanceSuite(
  memoryConformanceSubject({
    name: 'memory with optional capabilities masked off',
    capabilities: MASKED,
    onTransport(transport: Transport) {
      Object.defineProperty(transport.driver, 'capabilities', { value: MASKED });
    },
  }),
);
