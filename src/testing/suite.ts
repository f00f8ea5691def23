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
import { testTimeoutOf, useConformanceEnv, type ConformanceSubject } from './harness.js';
import { lifecycleTests } from './lifecycle.js';
import { malformedTests } from './malformed.js';
import { notifyTests } from './notify.js';
import { replyAddressTests } from './reply-address.js';
import { rpcNotSupportedTests, rpcTests } from './rpc.js';
import { rpcDispatchTests } from './rpc-dispatch.js';
import { wireFeatureTests } from './wire-features.js';

export type { ConformanceSubject } from './harness.js';

/**
 * Registers the conformance suite for `subject`. Tests for capabilities the subject lacks
 * are not skipped: they assert that asking for the capability fails at once with
 * NotSupportedError. Every queue, exchange and pool name starts with one run prefix that
 * `subject.after` receives for a final sweep. Each test gets `subject.testTimeout` (30 s times
 * `timeScale` unless given), whatever the vitest config says.
 */
export function runConformanceSuite(subject: ConformanceSubject): void {
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
    if (subject.capabilities.rpc) {
      rpcTests(env);
      rpcDispatchTests(env);
    } else {
      rpcNotSupportedTests(env);
    }
    notifyTests(env);
    batchTests(env);
    lifecycleTests(env);
    malformedTests(env);
    replyAddressTests(env);
    contractTests(env);
    healthTests(env);
    wireFeatureTests(env);
    deliveryTests(env);
    handlerTimeoutTests(env);
    deadLetterTests(env);
  });
}
