// How the Kafka driver classifies its client libraries' errors, with the libraries' own error
// classes and protocol codes: what no retry can fix (authorization, SASL, record too large) is
// never retriable, so a Notifier's default retry (forever) stops at once.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import kafkajs from 'kafkajs';
import { AuthenticationError, NetworkError, ProtocolError, ResponseError } from '@platformatic/kafka';
import { ConnectionError, MessageDeliveryFailure } from '../../../src/core/errors.js';
import { permanentFailureOf, toMessagingError } from '../../../src/drivers/kafka/errors.js';

const { KafkaJSProtocolError, KafkaJSSASLAuthenticationError, KafkaJSNumberOfRetriesExceeded, KafkaJSConnectionError, KafkaJSNonRetriableError } = kafkajs;
/** kafkajs's own table of protocol errors by code (what its decoders throw). */
const { createErrorFromCode } = createRequire(import.meta.url)('kafkajs/src/protocol/error.js') as { createErrorFromCode(code: number): { type: string; code: number; retriable: boolean; message: string } };

const protocol = (code: number) => new KafkaJSProtocolError(createErrorFromCode(code) as unknown as Error);

describe('Kafka errors a retry cannot fix', () => {
  const permanent: Array<[string, number]> = [
    ['TOPIC_AUTHORIZATION_FAILED', 29],
    ['GROUP_AUTHORIZATION_FAILED', 30],
    ['CLUSTER_AUTHORIZATION_FAILED', 31],
    ['MESSAGE_TOO_LARGE', 10],
    ['RECORD_LIST_TOO_LARGE', 18],
    ['SASL_AUTHENTICATION_FAILED', 58],
  ];

  it.each(permanent)('kafkajs %s (code %i) is not retriable, bare or wrapped by its retrier', (type, code) => {
    const raw = protocol(code);
    expect(raw.type).toBe(type);
    for (const err of [raw, new KafkaJSNumberOfRetriesExceeded(raw, { retryCount: 5, retryTime: 1000 }), new (KafkaJSNonRetriableError as unknown as new (e: Error, o: { cause: Error }) => Error)(raw, { cause: raw })]) {
      const mapped = toMessagingError(err, 'Could not produce 1 record(s) to t');
      expect(mapped.retriable).toBe(false);
      expect(mapped.message).toContain(type);
    }
  });

  it('kafkajs SASL authentication failure: a non-retriable ConnectionError', () => {
    const err = new (KafkaJSSASLAuthenticationError as unknown as new (m: string) => Error)('SASL PLAIN authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN');
    const mapped = toMessagingError(err, 'Could not connect the Kafka producer');
    expect(mapped).toBeInstanceOf(ConnectionError);
    expect(mapped.retriable).toBe(false);
    // kafkajs's connect() wraps it in its retrier's error, whose name looks like a connection failure.
    const wrapped = toMessagingError(new KafkaJSNumberOfRetriesExceeded(err, { retryCount: 0, retryTime: 0 }), 'Could not connect the Kafka producer');
    expect(wrapped.retriable).toBe(false);
  });

  it.each(permanent)('@platformatic/kafka %s is not retriable, bare or inside a ResponseError', (type, code) => {
    const raw = new ProtocolError(code);
    expect(raw.apiId).toBe(type);
    expect(toMessagingError(raw, 'produce').retriable).toBe(false);
    const response = new ResponseError(0, 9, { '/topics/0/partitions/0': [code, null] }, {});
    expect(toMessagingError(response, 'produce').retriable).toBe(false);
    expect(permanentFailureOf(response)).toBe(type);
  });

  it('@platformatic/kafka AuthenticationError: not retriable', () => {
    const mapped = toMessagingError(new (AuthenticationError as unknown as new (m: string) => Error)('SASL authentication failed'), 'connect');
    expect(mapped).toBeInstanceOf(ConnectionError);
    expect(mapped.retriable).toBe(false);
  });

  it('what a retry can fix stays retriable', () => {
    // NOT_LEADER_FOR_PARTITION (6), REQUEST_TIMED_OUT (7), a lost connection.
    expect(toMessagingError(protocol(6), 'produce').retriable).toBe(true);
    expect(toMessagingError(protocol(7), 'produce').retriable).toBe(true);
    expect(toMessagingError(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:9092'), 'produce')).toBeInstanceOf(ConnectionError);
    expect(toMessagingError(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:9092'), 'produce').retriable).toBe(true);
    expect(toMessagingError(new NetworkError('Connection closed'), 'produce').retriable).toBe(true);
    expect(toMessagingError(new ProtocolError(6), 'produce')).toBeInstanceOf(MessageDeliveryFailure);
    expect(toMessagingError(new ProtocolError(6), 'produce').retriable).toBe(true);
  });
});
