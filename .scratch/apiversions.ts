import { connect } from 'node:net';
import { startKafkaMock } from '../test/support/kafka-broker.js';
const broker = await startKafkaMock({ brokers: 1 });
const [host, port] = broker.brokers[0].split(':');
const cid = Buffer.from('probe');
const body = Buffer.alloc(2 + 2 + 4 + 2 + cid.length);
body.writeInt16BE(18, 0); body.writeInt16BE(0, 2); body.writeInt32BE(1, 4); body.writeInt16BE(cid.length, 8); cid.copy(body, 10);
const size = Buffer.alloc(4); size.writeInt32BE(body.length);
const sock = connect(Number(port), host);
let buf = Buffer.alloc(0);
const NAMES: Record<number, string> = {0:'Produce',1:'Fetch',2:'ListOffsets',3:'Metadata',8:'OffsetCommit',9:'OffsetFetch',10:'FindCoordinator',11:'JoinGroup',12:'Heartbeat',13:'LeaveGroup',14:'SyncGroup',15:'DescribeGroups',16:'ListGroups',18:'ApiVersions',19:'CreateTopics',22:'InitProducerId'};
sock.on('data', async (d) => { buf = Buffer.concat([buf, d]); if (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
  let o = 8; const err = buf.readInt16BE(o); o += 2; const n = buf.readInt32BE(o); o += 4;
  const out = [];
  for (let i = 0; i < n; i++) { const k = buf.readInt16BE(o), mi = buf.readInt16BE(o+2), ma = buf.readInt16BE(o+4); o += 6; out.push(`${NAMES[k] ?? k}:${mi}-${ma}`); }
  console.log('err', err, out.join(' ')); sock.end(); await broker.stop(); } });
sock.write(Buffer.concat([size, body]));
