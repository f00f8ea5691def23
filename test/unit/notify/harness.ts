// Shared setup of the notification listener tests: memory:// transports and listeners that are
// stopped, drained and cleaned up after every test.
import { afterEach } from 'vitest';
import { getNotificationTransport, type Transport } from '../../../src/transport.js';
import type { NotificationListener } from '../../../src/notify/listener.js';
import { uniqueName } from '../../../src/testing/wait.js';

/** Registers the afterEach cleanup; call once at the top of a test file. */
export function useNotifyHarness(): { transport(): Promise<Transport>; track<L extends NotificationListener>(listener: L): L } {
  const transports: Transport[] = [];
  const listeners: NotificationListener[] = [];
  afterEach(async () => {
    for (const l of listeners.splice(0)) {
      await l.stop().catch(() => undefined);
      await l.wait().catch(() => undefined);
    }
    await Promise.all(transports.splice(0).map((t) => t.cleanup()));
  });
  return {
    async transport() {
      const t = await getNotificationTransport('memory:///' + uniqueName());
      transports.push(t);
      return t;
    },
    track(listener) {
      listeners.push(listener);
      return listener;
    },
  };
}
