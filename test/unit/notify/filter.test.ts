// NotificationFilter: Python re.match semantics (anchored at the start only) and dict filters.
import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '../../../src/core/errors.js';
import { NotificationFilter } from '../../../src/notify/filter.js';

const meta = { message_id: 'm-1', timestamp: '2024-05-01 10:00:00.123000' };

describe('NotificationFilter', () => {
  it('matches everything when empty', () => {
    expect(new NotificationFilter().match({}, null, 'x', meta, 1)).toBe(true);
  });

  it('anchors at the start only, like re.match', () => {
    const f = new NotificationFilter({ eventType: 'compute\\.instance' });
    expect(f.match({}, 'p', 'compute.instance.create.end', meta, {})).toBe(true);
    expect(f.match({}, 'p', 'x.compute.instance', meta, {})).toBe(false);
    const anchoredEnd = new NotificationFilter({ eventType: 'compute$' });
    expect(anchoredEnd.match({}, 'p', 'compute', meta, {})).toBe(true);
    expect(anchoredEnd.match({}, 'p', 'compute.x', meta, {})).toBe(false);
  });

  it('accepts RegExp objects and keeps them start-anchored across repeated use', () => {
    const f = new NotificationFilter({ publisherId: /compute/gi });
    for (let i = 0; i < 3; i++) {
      expect(f.match({}, 'COMPUTE.host1', 'e', meta, {})).toBe(true);
      expect(f.match({}, 'api.compute', 'e', meta, {})).toBe(false);
    }
  });

  it('a pattern on a missing or non-string value does not match', () => {
    const f = new NotificationFilter({ publisherId: '.*' });
    expect(f.match({}, null, 'e', meta, {})).toBe(false);
    expect(f.match({}, 'x', 'e', meta, {})).toBe(true);
  });

  it('dict filters need every key present with a matching string value', () => {
    const f = new NotificationFilter({ context: { project_id: '^p1$', roles: 'admin' }, payload: { state: 'active' }, metadata: { timestamp: '2024' } });
    const ctx = { project_id: 'p1', roles: 'admin,member' };
    expect(f.match(ctx, 'p', 'e', meta, { state: 'active' })).toBe(true);
    expect(f.match({ project_id: 'p1' }, 'p', 'e', meta, { state: 'active' })).toBe(false);
    expect(f.match({ ...ctx, project_id: 'p10' }, 'p', 'e', meta, { state: 'active' })).toBe(false);
    expect(f.match(ctx, 'p', 'e', meta, { state: ['active'] })).toBe(false);
    expect(f.match(ctx, 'p', 'e', meta, 'active')).toBe(false);
    expect(f.match(ctx, 'p', 'e', { ...meta, timestamp: '2023-01-01 00:00:00' }, { state: 'active' })).toBe(false);
  });

  it('rejects invalid patterns with InvalidArgument naming the field', () => {
    expect(() => new NotificationFilter({ eventType: '(' })).toThrow(InvalidArgument);
    expect(() => new NotificationFilter({ eventType: '(' })).toThrow(/filter\.eventType/);
    expect(() => new NotificationFilter({ payload: { a: 3 as never } })).toThrow(/filter\.payload\.a/);
    expect(() => new NotificationFilter({ context: 'x' as never })).toThrow(/filter\.context/);
  });
});
