// A driver declaring `rpc: false` (memory:// with the capability masked off on the instance, its
// doSend and doListen still able to work): BaseDriver itself must refuse every RPC send and RPC
// listen with NotSupportedError, and the suite's "rpc (not supported)" branch must pass.
import type { Transport } from 'tidings';
import type { DriverCapabilities } from 'tidings/driver';
import { memoryConformanceSubject, runConformanceSuite } from 'tidings/testing';

const NO_RPC: DriverCapabilities = Object.freeze({ rpc: false, fanout: false, requeue: true, pools: true, callMonitor: false, durableNotifications: true });

runConformanceSuite(
  memoryConformanceSubject({
    name: 'memory with rpc masked off',
    capabilities: NO_RPC,
    onTransport(transport: Transport) {
      Object.defineProperty(transport.driver, 'capabilities', { value: NO_RPC });
    },
  }),
);
