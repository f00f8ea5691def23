// The Kafka driver reads back the headers it writes on retry copies: values it could not have
// written (forged or corrupted) are malformed, never obeyed.
import { describe, expect, it } from 'vitest';
import { MAX_TIMER_MS } from '../../../src/core/checks.js';
import { delayUntil, NOT_BEFORE_SLACK_MS, parseRetryHeaders } from '../../../src/drivers/kafka/retry-headers.js';
import { HEADERS } from '../../../src/drivers/kafka/topology.js';

const now = 1_800_000_000_000;
const rules = { originalTopic: 'billing.info', requeueBackoff: 5000, now };
const parse = (headers: Record<string, string>) => parseRetryHeaders({ headers }, rules);

describe('Kafka retry headers read back', () => {
  it('what tidings writes is obeyed', () => {
    expect(parse({})).toEqual({ ok: true, headers: { previousDeliveries: 0, originalTopic: 'billing.info', notBefore: 0 } });
    expect(parse({ [HEADERS.deliveries]: '3', [HEADERS.originalTopic]: 'billing.info', [HEADERS.notBefore]: String(now + 5000) })).toEqual({
      ok: true,
      headers: { previousDeliveries: 3, originalTopic: 'billing.info', notBefore: now + 5000 },
    });
    // A copy due in the past (it waited in the topic), and clock slack between hosts.
    expect(parse({ [HEADERS.notBefore]: String(now - 86_400_000) }).ok).toBe(true);
    expect(parse({ [HEADERS.notBefore]: String(now + 5000 + NOT_BEFORE_SLACK_MS) }).ok).toBe(true);
  });

  it.each([
    ['a delivery count that is not a number', { [HEADERS.deliveries]: 'many' }, HEADERS.deliveries],
    ['a negative delivery count', { [HEADERS.deliveries]: '-4' }, HEADERS.deliveries],
    ['a zero delivery count', { [HEADERS.deliveries]: '0' }, HEADERS.deliveries],
    ['a fractional delivery count', { [HEADERS.deliveries]: '1.5' }, HEADERS.deliveries],
    ['a huge delivery count', { [HEADERS.deliveries]: '99999999999999999999' }, HEADERS.deliveries],
    ['an exponent', { [HEADERS.deliveries]: '1e3' }, HEADERS.deliveries],
    ['another address as the original topic', { [HEADERS.originalTopic]: 'payroll.info' }, HEADERS.originalTopic],
    ['an empty original topic', { [HEADERS.originalTopic]: '' }, HEADERS.originalTopic],
    ['a due time that is not a number', { [HEADERS.notBefore]: 'tomorrow' }, HEADERS.notBefore],
    ['a negative due time', { [HEADERS.notBefore]: '-1' }, HEADERS.notBefore],
    ['a far-future due time', { [HEADERS.notBefore]: String(now + 365 * 86_400_000) }, HEADERS.notBefore],
    ['a due time past what a timer takes', { [HEADERS.notBefore]: '9'.repeat(15) }, HEADERS.notBefore],
    ['a due time of 400 digits', { [HEADERS.notBefore]: '9'.repeat(400) }, HEADERS.notBefore],
  ])('%s is malformed, naming the header', (_what, headers, name) => {
    const parsed = parse(headers);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.reason).toContain(name);
      // Where it is dead-lettered: the address it was read for, never the one the header names.
      expect(parsed.originalTopic).toBe('billing.info');
      expect(parsed.reason.length).toBeLessThan(200);
    }
  });

  it('a wait is never longer than a Node timer takes (longer ones fire after 1 ms and would spin)', () => {
    expect(delayUntil(now + 1000, now)).toBe(1000);
    expect(delayUntil(now - 1000, now)).toBe(0);
    expect(delayUntil(now + 2 ** 40, now)).toBe(MAX_TIMER_MS);
  });

  it('without `now` in the rules, a due time is checked against the clock', () => {
    const clockRules = { originalTopic: 'billing.info', requeueBackoff: 5000 };
    const at = (ms: number) => parseRetryHeaders({ headers: { [HEADERS.notBefore]: String(ms) } }, clockRules);
    expect(at(Date.now() + 5000)).toEqual({ ok: true, headers: { previousDeliveries: 0, originalTopic: 'billing.info', notBefore: expect.any(Number) } });
    const ahead = at(Date.now() + 5000 + NOT_BEFORE_SLACK_MS + 3_600_000);
    expect(ahead.ok).toBe(false);
    expect(!ahead.ok && ahead.reason).toMatch(/ms ahead, more than requeueBackoff 5000 ms allows/);
  });
});
