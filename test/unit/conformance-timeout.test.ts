// The conformance suite's per-test time limit (src/testing/harness.ts): 30 s times timeScale, or
// the subject's own testTimeout; a limit that is not a positive number is refused when the suite
// is registered. The suite's own first test checks that vitest applies it.
import { expect, it } from 'vitest';
import { testTimeoutOf } from '../../src/testing/harness.js';
import { memoryConformanceSubject } from '../../src/testing/memory.js';

it('is 30 s times timeScale unless the subject gives testTimeout; a non-positive or non-finite one is a RangeError', () => {
  expect(testTimeoutOf(memoryConformanceSubject())).toBe(30_000);
  expect(testTimeoutOf(memoryConformanceSubject({ timeScale: 3 }))).toBe(90_000);
  expect(testTimeoutOf(memoryConformanceSubject({ timeScale: 1.5 }))).toBe(45_000);
  expect(testTimeoutOf(memoryConformanceSubject({ timeScale: 3, testTimeout: 12_345 }))).toBe(12_345);
  for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
    expect(() => testTimeoutOf(memoryConformanceSubject({ testTimeout: bad }))).toThrow(/testTimeout must be a positive number of ms/);
  }
});
