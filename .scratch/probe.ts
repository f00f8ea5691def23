import { Producer, Consumer, Admin, stringSerializers, stringDeserializers } from '@platformatic/kafka';
import { startKafkaMock } from '../test/support/kafka-broker.js';
const broker = await startKafkaMock({ brokers: 3 });
const t0 = Date.now();
const log = (...a: unknown[]) => console.log(((Date.now() - t0) / 1000).toFixed(1), ...a);
try {
  const admin = new Admin({ clientId: 'a', bootstrapBrokers: broker.brokers });
  try { await admin.createTopics({ topics: ['x1'], partitions: 2, replicas: 1 }); log('created'); } catch (e) { log('createTopics failed', (e as Error).message, (e as any).errors?.map((x: Error) => x.message)); }
  const md = await admin.metadata({ topics: ['x1'], autocreateTopics: true } as any).catch((e) => (log('metadata err', e.message, e.errors?.map((x: Error) => x.message)), undefined));
  log('metadata', md && [...(md.topics as any).keys?.() ?? []]);
  const producer = new Producer({ clientId: 'p', bootstrapBrokers: broker.brokers, serializers: stringSerializers, autocreateTopics: true } as any);
  await producer.send({ messages: [{ topic: 'x1', key: 'k', value: 'hello', headers: { h: 'v' } }], acks: -1 } as any).then((r) => log('sent', r), (e) => log('send err', e.message, e.errors?.map((x: Error) => x.message)));
  const consumer = new Consumer({ groupId: 'g1', clientId: 'c', bootstrapBrokers: broker.brokers, deserializers: stringDeserializers, sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10000 } as any);
  consumer.on('consumer:group:join', (p) => log('join', JSON.stringify(p)));
  const stream = await consumer.consume({ topics: ['x1'], mode: 'committed', fallbackMode: 'earliest', autocommit: false, maxWaitTime: 200 } as any).catch((e) => (log('consume err', e.message, e.errors?.map((x: Error) => x.message)), undefined));
  if (stream) {
    stream.on('error', (e) => log('stream err', e.message));
    await new Promise<void>((resolve) => { stream.on('data', (m: any) => { log('data', m.topic, m.partition, m.offset, m.key, m.value, [...m.headers]); resolve(); }); setTimeout(resolve, 15000); });
    await stream.close();
  }
  await consumer.close(true); await producer.close(); await admin.close();
} finally { await broker.stop(); }
