// The error tree: names, codes, retriable defaults, instanceof chain, cause.
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  AbortError,
  ConnectionError,
  DriverLoadFailure,
  InvalidArgument,
  InvalidState,
  InvalidTarget,
  InvalidTransportURL,
  MalformedMessage,
  MessageDeliveryFailure,
  MessageUndeliverable,
  MessagingError,
  MessagingTimeout,
  NoSuchMethod,
  NotSupportedError,
  RemoteError,
  RPCDispatcherError,
  RPCVersionCapError,
  ServerListenError,
  UnsupportedVersion,
} from '../../src/core/errors.js';

const cases: Array<[string, () => MessagingError, string, boolean]> = [
  ['MessagingError', () => new MessagingError('m'), 'MESSAGING_ERROR', false],
  ['MessagingTimeout', () => new MessagingTimeout('m'), 'MESSAGING_TIMEOUT', true],
  ['MessageDeliveryFailure', () => new MessageDeliveryFailure('m'), 'MESSAGE_DELIVERY_FAILURE', false],
  ['MessageUndeliverable', () => new MessageUndeliverable('m', 'ex', 'rk'), 'MESSAGE_UNDELIVERABLE', false],
  ['ConnectionError', () => new ConnectionError('m'), 'CONNECTION_ERROR', true],
  ['InvalidTarget', () => new InvalidTarget('m'), 'INVALID_TARGET', false],
  ['InvalidTransportURL', () => new InvalidTransportURL('m'), 'INVALID_TRANSPORT_URL', false],
  ['InvalidArgument', () => new InvalidArgument('f', 'e', 1), 'INVALID_ARGUMENT', false],
  ['NotSupportedError', () => new NotSupportedError('m'), 'NOT_SUPPORTED', false],
  ['DriverLoadFailure', () => new DriverLoadFailure('m'), 'DRIVER_LOAD_FAILURE', false],
  ['RPCVersionCapError', () => new RPCVersionCapError('1.3', '1.2'), 'RPC_VERSION_CAP', false],
  ['RPCDispatcherError', () => new RPCDispatcherError('m'), 'RPC_DISPATCHER_ERROR', false],
  ['NoSuchMethod', () => new NoSuchMethod('m'), 'NO_SUCH_METHOD', false],
  ['UnsupportedVersion', () => new UnsupportedVersion('2.0'), 'UNSUPPORTED_VERSION', false],
  ['ServerListenError', () => new ServerListenError('m'), 'SERVER_LISTEN_ERROR', false],
  ['MalformedMessage', () => new MalformedMessage('m'), 'MALFORMED_MESSAGE', false],
  ['InvalidState', () => new InvalidState('m'), 'INVALID_STATE', false],
  ['AbortError', () => new AbortError('m'), 'ABORTED', false],
  ['RemoteError', () => new RemoteError('ValueError', 'v'), 'REMOTE_ERROR', false],
];

describe('error tree', () => {
  it.each(cases)('%s has its name, code, retriable default and is a MessagingError and an Error', (name, make, code, retriable) => {
    const err = make();
    expect(err.name).toBe(name);
    expect(err.code).toBe(code);
    expect(err.retriable).toBe(retriable);
    expect(err).toBeInstanceOf(MessagingError);
    expect(err).toBeInstanceOf(Error);
    expect(err.stack).toContain(name);
    expect(String(err).startsWith(`${name}: `)).toBe(true);
  });

  it('codes are unique', () => {
    const codes = cases.map(([, make]) => make().code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('dispatcher errors are RPCDispatcherErrors', () => {
    expect(new NoSuchMethod('x')).toBeInstanceOf(RPCDispatcherError);
    expect(new UnsupportedVersion('1.0')).toBeInstanceOf(RPCDispatcherError);
    expect(new NoSuchMethod('x')).not.toBeInstanceOf(UnsupportedVersion);
  });

  it('retriable can be overridden either way', () => {
    expect(new ConnectionError('x', { retriable: false }).retriable).toBe(false);
    expect(new MessagingError('x', { retriable: true }).retriable).toBe(true);
    expect(new MessageUndeliverable('x', 'e', 'r', { retriable: true }).retriable).toBe(true);
  });

  it('carries cause only when given', () => {
    const low = new Error('socket closed');
    const err = new ConnectionError('lost', { cause: low });
    expect(err.cause).toBe(low);
    expect('cause' in new ConnectionError('x')).toBe(false);
    expect(new InvalidTarget('t', { topic: 'x' }, { cause: 'why' }).cause).toBe('why');
    expect(new InvalidArgument('f', 'e', 1, { cause: low }).cause).toBe(low);
  });

  it('a subclass declared by an application inherits code and retriable default', () => {
    class QuotaError extends MessagingError {}
    const e = new QuotaError('q');
    expect(e.name).toBe('QuotaError');
    expect(e.code).toBe('MESSAGING_ERROR');
    expect(e.retriable).toBe(false);
    class FlakyError extends ConnectionError {}
    expect(new FlakyError('f').retriable).toBe(true);
  });
});

describe('error messages and fields', () => {
  it('InvalidArgument names field, expected and received', () => {
    const e = new InvalidArgument('batchSize', 'a positive integer', -1);
    expect(e.message).toBe('Invalid batchSize: expected a positive integer, received number -1');
    expect([e.field, e.expected, e.received]).toEqual(['batchSize', 'a positive integer', -1]);
    const describe = (v: unknown) => new InvalidArgument('f', 'x', v).message.replace('Invalid f: expected x, received ', '');
    expect(describe(null)).toBe('null');
    expect(describe(undefined)).toBe('undefined');
    expect(describe('abc')).toBe('"abc"');
    expect(describe('y'.repeat(100))).toBe(JSON.stringify('y'.repeat(77) + '...'));
    expect(describe(true)).toBe('boolean true');
    expect(describe(3n)).toBe('bigint 3');
    expect(describe([1, 2])).toBe('an array of 2');
    expect(describe([])).toBe('an empty array');
    expect(describe({ password: 'secret' })).toBe('an object');
    expect(describe(() => 1)).toBe('function');
  });

  it('dispatcher and version-cap errors use oslo\'s wording', () => {
    expect(new NoSuchMethod('frob').message).toBe('Endpoint does not support RPC method frob');
    expect(new NoSuchMethod('frob').method).toBe('frob');
    const uv = new UnsupportedVersion('2.0', 'frob');
    expect(uv.message).toBe('Endpoint does not support RPC version 2.0. Attempted method: frob');
    expect([uv.version, uv.method]).toEqual(['2.0', 'frob']);
    const cap = new RPCVersionCapError('1.3', '1.2');
    expect(cap.message).toBe(
      'Requested message version, 1.3 is incompatible. It needs to be equal in major version and less than or equal in minor version as the specified version cap 1.2.',
    );
    expect([cap.version, cap.versionCap]).toEqual(['1.3', '1.2']);
  });

  it('RemoteError keeps the remote fields; its message is the remote class and message, the traceback only in traceback and stack', () => {
    const e = new RemoteError('ValueError', 'bad', ['Traceback\n', 'ValueError: bad\n'], 'builtins', ['bad'], { k: 1 });
    expect(e.message).toBe('Remote error: ValueError bad.');
    expect(e.stack).toBe('RemoteError: Remote error: ValueError bad.\n    [remote traceback]\nTraceback\nValueError: bad\n');
    expect([e.excType, e.value, e.module]).toEqual(['ValueError', 'bad', 'builtins']);
    expect(e.args).toEqual(['bad']);
    expect(e.kwargs).toEqual({ k: 1 });
    const bare = new RemoteError('X', 'v');
    expect(bare.message).toBe('Remote error: X v.');
    expect(bare.traceback).toEqual([]);
    expect(bare.module).toBeUndefined();
  });

  it('MessageUndeliverable and InvalidTarget keep their extra fields', () => {
    const u = new MessageUndeliverable('no route', 'ex', 'rk');
    expect([u.exchange, u.routingKey]).toEqual(['ex', 'rk']);
    expect(new InvalidTarget('t', { topic: 'x' }).target).toEqual({ topic: 'x' });
  });
});

describe('causes from broker libraries', () => {
  class ReplyError extends Error {
    command = { name: 'auth', args: ['nosuchuser', 'Sup3rSecret'] };
    code = 'WRONGPASS';
  }

  it('keep their class, message, stack and code but nothing else a library put on them, along the chain', () => {
    const root = Object.assign(new Error('socket closed'), { errno: -104, options: { password: 'Sup3rSecret' } });
    const raw = new ReplyError('WRONGPASS invalid username-password pair', { cause: root });
    const err = new ConnectionError('Redis refused the login', { cause: raw });
    const cause = err.cause as ReplyError;
    expect(cause).toBeInstanceOf(ReplyError);
    expect([cause.message, cause.stack, cause.code]).toEqual([raw.message, raw.stack, 'WRONGPASS']);
    expect(cause.command).toBeUndefined();
    expect((cause.cause as Error & { errno: number }).errno).toBe(-104);
    for (const text of [inspect(err, { depth: Infinity }), JSON.stringify(err), inspect(cause.cause, { depth: Infinity })]) expect(text).not.toContain('Sup3rSecret');
    // The leak the snapshot prevents: the raw error itself shows the password.
    expect(inspect(raw, { depth: Infinity })).toContain('Sup3rSecret');
  });

  it('an error with nothing but safe fields is kept as it is', () => {
    const plain = new TypeError('bad');
    expect(new MessageDeliveryFailure('x', { cause: plain }).cause).toBe(plain);
  });
});
