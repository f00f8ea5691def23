// NestJS errors across the wire: what an exception filter leaves (an Error, or RpcException's
// plain payload) becomes an oslo failure, and a NestJS caller gets an RpcException back.
import { RpcException } from '@nestjs/microservices';
import { RemoteError, toPrimitive } from '../index.js';

/**
 * The remote module of RpcException failures (oslo's failure `module`): a Python caller sees
 * `RemoteError` naming `RpcException`, a ClientTidings caller gets an RpcException back.
 */
export const NESTJS_REMOTE_MODULE = 'tidings.nestjs';

/** The oslo failure of an RpcException (its class name on the wire); kwargs.error is `getError()`. */
export class RpcExceptionFailure extends Error {
  static readonly remoteModule = NESTJS_REMOTE_MODULE;
  readonly args: unknown[];
  readonly kwargs: { error: unknown };

  constructor(error: unknown) {
    const message = typeof error === 'string' ? error : messageOf(error);
    super(message);
    this.name = 'RpcException';
    this.args = [message];
    // The filter's value as JSON can carry it: a Date becomes its text, a function disappears.
    this.kwargs = { error: toPrimitive(error) ?? null };
  }
}
Object.defineProperty(RpcExceptionFailure, 'name', { value: 'RpcException' });

function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : 'RpcException';
}

/**
 * What a handler's failure (after NestJS' exception filters) is sent as. NestJS' default filter
 * turns every exception into a plain `{ status: 'error', message }` (RpcException: its
 * `getError()`), which becomes an RpcException failure carrying it; an Error a filter lets
 * through is sent as itself, so callers see its class (a typed remote error).
 */
export function toFailure(error: unknown): unknown {
  if (error instanceof RpcException) return new RpcExceptionFailure(error.getError());
  if (error instanceof Error) return error;
  return new RpcExceptionFailure(error);
}

/** What a ClientTidings caller's Observable errors with: an RpcException failure rebuilt, else tidings' own error. */
export function fromFailure(error: unknown): unknown {
  if (error instanceof RemoteError && error.excType === 'RpcException' && error.module === NESTJS_REMOTE_MODULE) {
    const rebuilt = new RpcException((error.kwargs.error ?? error.value) as string | object);
    Object.defineProperty(rebuilt, 'cause', { value: error, enumerable: false, configurable: true });
    return rebuilt;
  }
  return error;
}

