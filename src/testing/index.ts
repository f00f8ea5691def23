// tidings/testing: the conformance suite every driver passes (third-party drivers too) and the
// memory:// broker's test hooks. The suite registers vitest tests, so it runs under vitest.
export { CONFORMANCE_PARTS, runConformanceSuite } from './suite.js';
export type { ConformancePart, ConformanceSubject } from './harness.js';
export {
  getMemoryBroker,
  memoryBrokerOf,
  resetMemoryBrokers,
  memoryConformanceSubject,
  MEMORY_CAPABILITIES,
  type MemoryBrokerHooks,
  type MemoryConformanceOptions,
} from './memory.js';
export { waitFor, uniqueName, deferred, type WaitOptions, type Deferred } from './wait.js';
