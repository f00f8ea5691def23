// A process that forgets cleanup(): on memory:// nothing holds Node's event loop, so it exits
// (the README's Lifecycle section says broker transports do hold it, as their connections do).
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltPackage } from '../support/examples.js';
import { runProcess } from '../support/process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const FORGETFUL = `
import { Notifier, getNotificationListener, getNotificationTransport, getRpcClient, getRpcServer, getRpcTransport } from 'tidings';
const rpc = await getRpcTransport('memory://');
await getRpcServer(rpc, { topic: 'calc', server: 'a' }, [{ add: (_ctx, { a, b }) => a + b }]).start();
console.log(await getRpcClient(rpc, { topic: 'calc' }).call({}, 'add', { a: 1, b: 2 }));
const events = await getNotificationTransport('memory://');
let got;
const arrived = new Promise((resolve) => (got = resolve));
await getNotificationListener(events, [{ topic: 'notifications' }], [{ info: () => got() }]).start();
await new Notifier(events, { publisherId: 'p' }).info({}, 'e', {});
await arrived;
console.log('forgot cleanup');
`;

describe('a process that forgets cleanup()', () => {
  beforeAll(requireBuiltPackage);

  it('exits on memory://, a server and a listener started', async () => {
    const r = await runProcess(process.execPath, ['--input-type=module', '-e', FORGETFUL], { cwd: ROOT, timeoutMs: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('3\nforgot cleanup\n');
  });
});
