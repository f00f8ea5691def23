// The ONE conformance suite every driver runs against its real broker (style.md habit 2):
// a driver is done when it passes it. Each driver file calls runConformanceSuite(subject).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { batchTests } from './batch.js';
import { contractTests } from './contract.js';
import { deadLetterTests } from './dead-letters.js';
import { deliveryTests } from './delivery.js';
import { handlerTimeoutTests } from './handler-timeout.js';
import { healthTests } from './health.js';
import { inspectionTests } from './inspection.js';
import { CONFORMANCE_PARTS, testTimeoutOf, useConformanceEnv, type ConformanceEnv, type ConformancePart, type ConformanceSubject } from './harness.js';
import { lifecycleTests } from './lifecycle.js';
import { malformedTests } from './malformed.js';
import { notifyTests } from './notify.js';
import { replyAddressTests } from './reply-address.js';
import { rpcNotSupportedTests, rpcTests } from './rpc.js';
import { rpcDispatchTests } from './rpc-dispatch.js';
import { wireFeatureTests } from './wire-features.js';

export type { ConformancePart, ConformanceSubject } from './harness.js';
export { CONFORMANCE_PARTS } from './harness.js';

/** What each part registers. */
const PARTS: Record<ConformancePart, (env: ConformanceEnv) => void> = {
  rpc(env) {
    if (env.caps.rpc) {
      rpcTests(env);
      rpcDispatchTests(env);
    } else {
      rpcNotSupportedTests(env);
    }
  },
  notify: notifyTests,
  batch: batchTests,
  lifecycle: lifecycleTests,
  malformed: malformedTests,
  'reply-address': replyAddressTests,
  contract: contractTests,
  health(env) {
    healthTests(env);
    inspectionTests(env);
  },
  wire: wireFeatureTests,
  delivery: deliveryTests,
  'handler-timeout': handlerTimeoutTests,
  'dead-letters': deadLetterTests,
};

/**
 * Registers the conformance suite for `subject`. Tests for capabilities the subject lacks
 * are not skipped: they assert that asking for the capability fails at once with
 * NotSupportedError. Every queue, exchange and pool name starts with one run prefix that
 * `subject.after` receives for a final sweep. Each test gets `subject.testTimeout` (30 s times
 * `timeScale` unless given), whatever the vitest config says. `subject.parts` registers only
 * those parts (a slow broker's suite split over several files).
 */
export function runConformanceSuite(subject: ConformanceSubject): void {
  const parts = new Set<ConformancePart>(subject.parts ?? CONFORMANCE_PARTS);
  for (const part of parts) {
    if (!(CONFORMANCE_PARTS as readonly string[]).includes(part)) throw new TypeError(`runConformanceSuite: unknown part ${JSON.stringify(part)}; the parts are ${CONFORMANCE_PARTS.join(', ')}`);
  }
  const runPrefix = `tconf${randomUUID().slice(0, 8)}`;
  // Every test inherits the limit (vitest passes a suite's timeout down to its tests).
  describe(`conformance: ${subject.name}`, { timeout: testTimeoutOf(subject) }, () => {
    beforeAll(async () => {
      await subject.before?.();
    });
    afterAll(async () => {
      await subject.after?.(runPrefix);
    });
    const env = useConformanceEnv(subject, runPrefix);
    it('runs each test under the subject time limit: testTimeout, else 30 s times timeScale', ({ task }) => {
      expect(task.timeout).toBe(testTimeoutOf(subject));
    });
    for (const part of CONFORMANCE_PARTS) if (parts.has(part)) PARTS[part](env);
  });
}
