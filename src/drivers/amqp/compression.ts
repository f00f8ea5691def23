// kombu's message compression (`kombu_compression`): the body deflated with a zlib wrapper and an
// application header `compression: application/x-gzip`, as kombu's Producer.publish and Message read it.
import type { MessageProperties } from 'amqplib';
import { deflateSync, inflateSync } from 'node:zlib';
import { MalformedMessage } from '../../core/errors.js';
import { KOMBU_GZIP } from './options.js';

/** The header kombu reads (and oslo sends with `kombu_compression=gzip`). */
export const COMPRESSION_HEADER = 'compression';

/** The body as kombu's `gzip`/`zlib` compression sends it. */
export function compressBody(content: Buffer): Buffer {
  return deflateSync(content);
}

/**
 * The body as its publisher encoded it: inflated when a `compression` header says so (whatever
 * this side's `kombu_compression`, as kombu reads any compressed message). Throws MalformedMessage
 * for a codec other than kombu's gzip, a corrupt body, or one inflating past `maxBytes` (0 = no
 * limit), which is never inflated further: a small compressed body cannot make us hold gigabytes.
 */
export function readBody(content: Buffer, properties: Pick<MessageProperties, 'headers'>, maxBytes: number): Buffer {
  const codec: unknown = properties.headers?.[COMPRESSION_HEADER];
  if (codec === undefined || codec === null) return content;
  if (codec !== KOMBU_GZIP) throw new MalformedMessage(`Message compressed with ${JSON.stringify(codec)}; tidings reads ${KOMBU_GZIP} only`);
  try {
    return inflateSync(content, maxBytes > 0 ? { maxOutputLength: maxBytes } : {});
  } catch (err) {
    const tooBig = err instanceof RangeError || (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE';
    throw new MalformedMessage(tooBig ? `Compressed message inflates past max_message_bytes (${maxBytes})` : `Compressed message does not inflate: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * `headers` plus the compression header of the message `properties` came with, if any: a copy of
 * a received message (requeue, dead letter, replay) is sent with its body as it came, so it keeps
 * saying how that body is encoded.
 */
export function keepingEncoding(properties: Pick<MessageProperties, 'headers'>, headers: Record<string, unknown>): Record<string, unknown> {
  const encoding: unknown = properties.headers?.[COMPRESSION_HEADER];
  return encoding === undefined ? headers : { ...headers, [COMPRESSION_HEADER]: encoding };
}
