// NestJS microservices (@nestjs/microservices), as a NestJS user writes them: a microservice app
// with a controller (`@MessagePattern` `echo` returning its payload, `@EventPattern` `sink`
// counting casts; both patterns unique to the run) and a `ClientProxy` calling it with `send` (a call) and `emit` (a cast). The
// app and the client are two connections in one process, as tidings' bench runs its server and
// client. Decorators are applied with `Reflect.decorate`, as compiled TypeScript does, so the
// runner needs no compiler. Transports at their defaults: `--transport rmq` (queue per run; the
// client's replies on RabbitMQ's direct reply-to) or `--transport redis` (pub/sub channels).
//   node --import tsx bench/peers/nest.mjs --transport rmq --scenario call-sequential --count 2000
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientProxyFactory, EventPattern, MessagePattern, Transport } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import amqplib from 'amqplib';
import { PAYLOAD_TEXT, RABBIT_URL, REDIS_URL, measureRpc, runPeer, unique, within } from './common.mjs';

const transport = process.argv.includes('--transport') ? process.argv[process.argv.indexOf('--transport') + 1] : undefined;
if (transport !== 'rmq' && transport !== 'redis') throw new Error(`--transport must be rmq or redis; received ${JSON.stringify(transport)}`);
// The runner's own flags follow; --transport is this file's.
process.argv.splice(process.argv.indexOf('--transport'), 2);

// Patterns unique to the run: the Redis transport's channels are named after them.
const ECHO = unique('bench-echo');
const SINK = unique('bench-sink');
let handled = 0;

class BenchController {
  echo(data) {
    return data;
  }

  sink() {
    handled++;
  }
}
Reflect.decorate([MessagePattern(ECHO)], BenchController.prototype, 'echo', Object.getOwnPropertyDescriptor(BenchController.prototype, 'echo'));
Reflect.decorate([EventPattern(SINK)], BenchController.prototype, 'sink', Object.getOwnPropertyDescriptor(BenchController.prototype, 'sink'));
Reflect.decorate([Controller()], BenchController);

class BenchModule {}
Reflect.decorate([Module({ controllers: [BenchController] })], BenchModule);

function options() {
  if (transport === 'redis') {
    const url = new URL(REDIS_URL);
    return { transport: Transport.REDIS, options: { host: url.hostname, port: Number(url.port || 6379) } };
  }
  return { transport: Transport.RMQ, options: { urls: [RABBIT_URL], queue: unique('bench-nest') } };
}

runPeer(async (args) => {
  const opts = options();
  const app = await NestFactory.createMicroservice(BenchModule, { ...opts, logger: false });
  await app.listen();
  const client = ClientProxyFactory.create(opts);
  try {
    await client.connect();
    return await measureRpc(args, {
      call: (i) => lastValueFrom(client.send(ECHO, { i, text: PAYLOAD_TEXT })),
      cast: (i) => lastValueFrom(client.emit(SINK, { i, text: PAYLOAD_TEXT }), { defaultValue: undefined }),
      handled: () => handled,
    });
  } finally {
    // The server publishes replies on a confirm channel (amqp-connection-manager's default) and
    // does not handle the promise: closing it while a reply's confirm is outstanding rejects that
    // promise unhandled ("Channel closed"), which would end the process. Every call was answered.
    process.on('unhandledRejection', (err) => {
      if (!(err instanceof Error && err.message === 'Channel closed')) throw err;
    });
    await within(10_000, 'closing NestJS', client.close().then(() => app.close()));
    if (opts.transport === Transport.RMQ) {
      // The run's queue (NestJS declares it durable, and nothing deletes it).
      const conn = await amqplib.connect(RABBIT_URL);
      const ch = await conn.createChannel();
      await ch.deleteQueue(opts.options.queue);
      await conn.close();
    }
  }
});
