// NotificationMetadata in a failing assertion: vitest's diff copies it (own keys, same prototype)
// and reads the expected keys on the copy; that must give a diff, not a private-field TypeError.
import { processError } from '@vitest/utils/error';
import { describe, expect, it } from 'vitest';
import { ReceivedMetadata } from '../../../src/contract/handlers.js';
import type { IncomingMessage } from '../../../src/contract/incoming-message.js';

const incoming = { redelivered: true, deliveryCount: 2, ctx: {}, unwrap: () => 'raw' } as unknown as IncomingMessage;
const metadata = () => new ReceivedMetadata('id-1', '2024-05-01 10:00:00', 'info', incoming);

/** The error a failing `toMatchObject` throws, as vitest's reporter prints it. */
function reported(expected: object): { message: string; diff: string } {
  try {
    expect(metadata()).toMatchObject(expected);
  } catch (err) {
    const shown = processError(err) as { message: string; diff?: string };
    return { message: shown.message, diff: shown.diff ?? '' };
  }
  throw new Error('the assertion passed');
}

describe('ReceivedMetadata', () => {
  it.each([[{ priority: 'warn' }], [{ redelivered: false, deliveryCount: 1 }], [{ message_id: 'other', priority: 'info' }], [{ unwrap: 'x' }]])('a failing toMatchObject(%j) shows a normal diff', (expected) => {
    const { message, diff } = reported(expected);
    expect(message).not.toMatch(/Cannot read private member/);
    expect(diff).not.toMatch(/Cannot read private member/);
    expect(message).toMatch(/to match object/);
    expect(diff).toMatch(/Expected/);
    expect(diff).toContain(Object.keys(expected)[0]);
  });

  it('still reads every field, keeps oslo two keys as its only enumerable ones and passes a matching toMatchObject', () => {
    const m = metadata();
    expect(Object.keys(m)).toEqual(['message_id', 'timestamp']);
    expect(m).toEqual({ message_id: 'id-1', timestamp: '2024-05-01 10:00:00' });
    expect(m).toMatchObject({ messageId: 'id-1', priority: 'info', redelivered: true, deliveryCount: 2 });
    const { unwrap } = m;
    expect(unwrap()).toBe('raw');
    expect(JSON.stringify(m)).toBe('{"message_id":"id-1","timestamp":"2024-05-01 10:00:00"}');
  });
});
