// The RabbitMQ driver's error mapping never lets a URL password through into a message.
import { describe, expect, it } from 'vitest';
import { ConnectionError } from '../../../../src/core/errors.js';
import { toMessagingError } from '../../../../src/drivers/amqp/errors.js';

const SECRET = 'Hz7kQpWx-secret';

describe('amqp error mapping redacts URLs inside library messages', () => {
  // A password holding an unencoded '@' is where a pattern-based scrubber used to leak.
  const raw = new Error(`connect failed: amqp://guest:p@${SECRET}@127.0.0.1:5672/ (and amqp://u:${SECRET}@h2)`);

  it('toMessagingError', () => {
    const err = toMessagingError(raw, 'Could not connect');
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err.message).toBe('Could not connect: connect failed: amqp://guest:***@127.0.0.1:5672/ (and amqp://u:***@h2)');
    expect(err.cause).toBe(raw);
  });
});
