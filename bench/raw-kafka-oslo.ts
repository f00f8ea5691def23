// The oslo-shaped raw baselines for Kafka ("raw-oslo"): raw-kafka.ts's kafkajs producer and group
// consumers, writing and reading notifications in oslo's Kafka format (oslo-wire.md §2: the 2.0
// envelope, the context as one nested `_context` object, `message_id` and `timestamp`), which
// tidings must write to interoperate with Python oslo.messaging's Kafka notifier and listener.
// Consumers decode both layers. The gap between raw-kafka.ts and these is the format's cost
// (a record about three times the size, two JSON layers each way); between these and tidings,
// tidings' own. oslo has no Kafka RPC, so the RPC scenarios have no second column.
import type { BaselineSet } from './harness.js';
import { osloKafkaNotificationText, unenvelope } from './oslo-envelope.js';
import { notificationBaselines } from './raw-kafka.js';

export const baselines: BaselineSet = notificationBaselines({ encode: osloKafkaNotificationText, decode: unenvelope });
