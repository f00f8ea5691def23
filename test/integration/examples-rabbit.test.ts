// The examples against the real RabbitMQ (all but the quick start, whose fixed topic
// "notifications" would meet other runs' backlog on a shared broker): same key lines as on memory://.
import { beforeAll, describe, expect, it } from 'vitest';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { EXPECTED, runExample } from '../support/examples.js';

describe('examples/ on RabbitMQ', () => {
  beforeAll(requireRabbitMQ);

  it.each(Object.entries(EXPECTED).filter(([file]) => file !== 'quick-start.ts'))('%s runs on rabbit:// and prints its key lines', async (file, patterns) => {
    const r = await runExample(file, RABBIT_URL);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const p of patterns) expect(r.stdout).toMatch(p);
  });
});
