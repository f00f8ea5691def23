// A request popped from a Redis request list: `{...}` (no deadline) or `x=<epoch ms>;{...}`; any
// other element is set aside with its reason, never dispatched.
import { describe, expect, it } from 'vitest';
import { parseListRequest } from '../../../src/drivers/redis/entry-fields.js';

describe('redis request list elements', () => {
  const now = 1_700_000_000_000;

  it('reads a body with and without its deadline prefix', () => {
    expect(parseListRequest('{"method":"m"}', now)).toEqual({ ok: true, body: '{"method":"m"}', fields: ['b', '{"method":"m"}'] });
    expect(parseListRequest(`x=${now + 5000};{"method":"m"}`, now)).toEqual({ ok: true, body: '{"method":"m"}', deadline: now + 5000, fields: ['b', '{"method":"m"}', 'x', String(now + 5000)] });
    // 1 to 15 digits, both ends.
    expect(parseListRequest('x=7;{}', now)).toMatchObject({ ok: true, body: '{}', deadline: 7 });
    expect(parseListRequest(`x=${'1'.repeat(15)};{}`, now)).toMatchObject({ ok: false, reason: expect.stringContaining('ms ahead') });
  });

  it('refuses any other shape, saying why', () => {
    for (const bad of ['', 'x', 'x=', 'x=;{}', `x=${'1'.repeat(16)};{}`, 'x=12a;{}', 'x=/;{}', 'x=:;{}', 'y=1;{}', 'x:1;{}', 'X=1;{}', ' {}', 'x=1{}']) {
      const parsed = parseListRequest(bad, now);
      expect(parsed.ok, JSON.stringify(bad)).toBe(false);
      if (!parsed.ok) expect(parsed.reason).toMatch(/starts with neither \{ nor x=<deadline>;/);
    }
  });
});
