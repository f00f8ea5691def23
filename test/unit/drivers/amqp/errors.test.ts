// The RabbitMQ driver's error mapping never lets a URL password through into a message.
import { describe, expect, it } from 'vitest';
import { ConnectionError, MessageDeliveryFailure } from '../../../../src/core/errors.js';
import { brokerSizeLimit, toMessagingError } from '../../../../src/drivers/amqp/errors.js';

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

describe('amqp errors that retrying cannot fix are not retriable', () => {
  it('403 ACCESS_REFUSED (a wrong password)', () => {
    const err = toMessagingError(Object.assign(new Error('Handshake terminated by server: 403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - Login was refused"'), { code: 403 }), 'Could not connect');
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err.retriable).toBe(false);
  });

  it('530 NOT_ALLOWED at connection.open (no permission on the vhost, or no such vhost), which amqplib reports without the reason', () => {
    // amqplib's own words, as seen against RabbitMQ 3.10 for a user without permission on the vhost.
    const err = toMessagingError(new Error('Expected ConnectionOpenOk; got <ConnectionClose channel:0>'), 'Could not connect');
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err.retriable).toBe(false);
    expect(err.message).toMatch(/refused to open the virtual host \(530 NOT_ALLOWED/);
  });

  it('brokerSizeLimit reads the limit from a max_message_size refusal only', () => {
    expect(brokerSizeLimit(new Error('PRECONDITION_FAILED - message size 2000 is larger than configured max size 1000'))).toBe(1000);
    expect(brokerSizeLimit(new Error('PRECONDITION_FAILED - inequivalent arg \'durable\''))).toBeUndefined();
  });

  it('406 PRECONDITION_FAILED on a publish (a message over the broker\'s max_message_size)', () => {
    const err = toMessagingError(Object.assign(new Error('Channel closed by server: 406 (PRECONDITION-FAILED) with message "PRECONDITION_FAILED - message size 2000 is larger than configured max size 1000"'), { code: 406 }), 'Could not publish');
    expect(err).toBeInstanceOf(MessageDeliveryFailure);
    expect(err.retriable).toBe(false);
    expect(err.message).toMatch(/larger than configured max size/);
  });

  it('a lost socket stays retriable', () => {
    expect(toMessagingError(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), 'x').retriable).toBe(true);
  });
});
