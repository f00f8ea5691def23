// `ConformanceSubject.parts`: a subject naming some parts registers those and nothing else (the
// Kafka suite runs as several files, side by side); an unknown part is refused before anything is
// registered.
import { describe, expect, it } from 'vitest';
import { memoryConformanceSubject, runConformanceSuite, type ConformancePart } from 'tidings/testing';

runConformanceSuite({ ...memoryConformanceSubject(), name: 'memory, malformed and reply-address only', parts: ['reply-address', 'malformed'] });

describe('conformance parts', () => {
  it('registers only the parts named: their describe blocks, no others', ({ task }) => {
    const suite = task.file.tasks.find((t) => t.name === 'conformance: memory, malformed and reply-address only');
    expect(suite?.type).toBe('suite');
    const blocks = (suite as { tasks: Array<{ type: string; name: string }> }).tasks.filter((t) => t.type === 'suite').map((t) => t.name);
    expect(blocks.length).toBeGreaterThan(0);
    expect(blocks.every((name) => /reply address|malformed/i.test(name)), blocks.join(' | ')).toBe(true);
    expect(blocks.some((name) => /malformed/i.test(name))).toBe(true);
    expect(blocks.some((name) => /reply address/i.test(name))).toBe(true);
  });

  it('refuses an unknown part at once, naming the parts there are', () => {
    expect(() => runConformanceSuite({ ...memoryConformanceSubject(), parts: ['rpc', 'nope' as ConformancePart] })).toThrow(/unknown part "nope"; the parts are rpc, notify, batch/);
  });
});
