#!/usr/bin/python3
"""Python oslo.messaging on RabbitMQ, measured as tidings' bench measures itself.

The reference users migrate from: Debian's python3-oslo.messaging (14.x) on /usr/bin/python3,
with the ``threading`` executor. One scenario per process; its stats are printed as one JSON
object on the last line, in the shape of tidings' bench (``ops``, ``elapsedMs``, ``opsPerSec``,
``cpuUsPerOp``, ``p50Ms``, ``p99Ms``). Run by bench/peers/run.mjs (``npm run bench:peers``);
alone::

    /usr/bin/python3 bench/peers/oslo_bench.py --scenario call-sequential --count 2000

Every scenario does what bench/scenarios.ts does with tidings, with the same payload (``{i,
text}``, 100 bytes of text), warm-up (``--warmup`` operations one at a time, unmeasured) and
in-flight limits (16), in one process, with oslo's defaults (``executor_thread_pool_size``
64, as tidings' bench server's ``executorSize``): the RPC server on one transport and the client on
another, as two processes would; 16 in flight are 16 threads, as a Python service would call.
"""

import argparse
import json
import logging
import os
import threading
import time
import uuid

PAYLOAD_TEXT = 'x' * 100
CONCURRENCY = 16
PUBLISH_WINDOW = 16
CALL_TIMEOUT_S = 30
WAIT_S = 120

SCENARIOS = ('call-sequential', 'call-concurrent', 'cast', 'notify-publish', 'consume-plain')


def percentile(samples, p):
    """Nearest-rank percentile, as bench/harness.ts."""
    if not samples:
        return None
    ordered = sorted(samples)
    rank = min(len(ordered) - 1, max(0, -(-p * len(ordered) // 100) - 1))
    return ordered[rank]


class Window:
    """The measured window: wall time and this process's CPU time (every thread)."""

    def __init__(self):
        self.start = time.perf_counter()
        self.cpu = time.process_time()

    def end(self, ops, latencies=None):
        elapsed_ms = (time.perf_counter() - self.start) * 1000
        cpu_us = (time.process_time() - self.cpu) * 1e6
        stats = {
            'ops': ops,
            'elapsedMs': round(elapsed_ms, 1),
            'opsPerSec': round(ops * 1000 / elapsed_ms) if elapsed_ms > 0 else 0,
        }
        if ops > 0:
            stats['cpuUsPerOp'] = round(cpu_us / ops, 1)
        if latencies:
            stats['p50Ms'] = round(percentile(latencies, 50), 3)
            stats['p99Ms'] = round(percentile(latencies, 99), 3)
        return stats


def keep_in_flight(count, window, op):
    """Runs op(i) for i in 0..count-1 on `window` threads, each starting the next i when free."""
    lock = threading.Lock()
    state = {'next': 0}
    errors = []

    def worker():
        while True:
            with lock:
                i = state['next']
                if i >= count:
                    return
                state['next'] = i + 1
            try:
                op(i)
            except Exception as exc:  # noqa: BLE001 - reported once all threads stopped
                errors.append(exc)
                return

    threads = [threading.Thread(target=worker) for _ in range(window)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def wait_until(cond, what):
    deadline = time.monotonic() + WAIT_S
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError('timed out waiting for %s' % what)
        time.sleep(0.001)


class Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.n = 0

    def add(self, k=1):
        with self.lock:
            self.n += k

    def value(self):
        return self.n


def measure_calls(args, call, window):
    for i in range(args.warmup):
        call(i)
    latencies = []

    def timed(i):
        t0 = time.perf_counter()
        call(i)
        latencies.append((time.perf_counter() - t0) * 1000)

    w = Window()
    keep_in_flight(args.count, window, timed)
    return w.end(len(latencies), latencies)


def measure_delivered(args, send, delivered, what):
    """Warm-up one at a time until delivered; then count sends, 16 at a time, timed until all delivered."""
    for i in range(args.warmup):
        send(i)
    wait_until(lambda: delivered() >= args.warmup, 'warm-up ' + what)
    base = delivered()
    w = Window()
    keep_in_flight(args.count, PUBLISH_WINDOW, send)
    wait_until(lambda: delivered() - base >= args.count, 'all ' + what)
    return w.end(args.count)


def rpc_scenario(om, conf, args):
    topic = 'bench-oslo-py-rpc-%s' % uuid.uuid4().hex
    server_transport = om.get_rpc_transport(conf, url=args.url)
    client_transport = om.get_rpc_transport(conf, url=args.url)
    handled = Counter()

    class Endpoint(object):
        def echo(self, ctxt, **kwargs):
            return kwargs

        def sink(self, ctxt, **kwargs):
            handled.add()

    server = om.get_rpc_server(server_transport, om.Target(topic=topic, server='bench'), [Endpoint()],
                               executor='threading')
    server.start()
    try:
        client = om.get_rpc_client(client_transport, om.Target(topic=topic), timeout=CALL_TIMEOUT_S)

        def call(i):
            return client.call({}, 'echo', i=i, text=PAYLOAD_TEXT)

        def cast(i):
            client.cast({}, 'sink', i=i, text=PAYLOAD_TEXT)

        if args.scenario == 'call-sequential':
            return measure_calls(args, call, 1)
        if args.scenario == 'call-concurrent':
            return measure_calls(args, call, CONCURRENCY)
        return measure_delivered(args, cast, handled.value, 'casts handled')
    finally:
        server.stop()
        server.wait()
        server_transport.cleanup()
        client_transport.cleanup()


def notify_scenario(om, conf, args):
    topic = 'bench-oslo-py-notify-%s' % uuid.uuid4().hex
    transport = om.get_notification_transport(conf, url=args.url)
    notifier = om.Notifier(transport, publisher_id='bench', driver='messagingv2', topics=[topic])

    def publish(i):
        notifier.info({}, 'bench.event', {'i': i, 'text': PAYLOAD_TEXT})

    consumed = Counter()

    class Endpoint(object):
        def info(self, ctxt, publisher_id, event_type, payload, metadata):
            consumed.add()
            return om.NotificationResult.HANDLED

    # notify-publish: nothing listens while publishing; the backlog is drained afterwards, untimed
    # (as tidings' scenario does). consume-plain: one listener on the shared queue while publishing.
    listener = None
    if args.scenario == 'consume-plain':
        listener = om.get_notification_listener(transport, [om.Target(topic=topic)], [Endpoint()],
                                                executor='threading')
        listener.start()
    try:
        if args.scenario == 'consume-plain':
            return measure_delivered(args, publish, consumed.value, 'notifications consumed')
        for i in range(args.warmup):
            publish(i)
        w = Window()
        keep_in_flight(args.count, PUBLISH_WINDOW, publish)
        stats = w.end(args.count)
        listener = om.get_notification_listener(transport, [om.Target(topic=topic)], [Endpoint()],
                                                executor='threading')
        listener.start()
        wait_until(lambda: consumed.value() >= args.warmup + args.count, 'drained backlog')
        return stats
    finally:
        if listener is not None:
            listener.stop()
            listener.wait()
        transport.cleanup()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--scenario', required=True, choices=SCENARIOS)
    parser.add_argument('--count', type=int, default=10000)
    parser.add_argument('--warmup', type=int, default=None,
                        help='unmeasured operations first (default min(200, count / 10), as tidings)')
    parser.add_argument('--url', default=os.environ.get('PEERS_RABBIT_URL', 'rabbit://guest:guest@127.0.0.1:5672/'))
    args = parser.parse_args()
    if args.warmup is None:
        args.warmup = min(200, -(-args.count // 10))

    logging.basicConfig(level=logging.CRITICAL)
    import oslo_messaging as om
    from oslo_config import cfg

    conf = cfg.ConfigOpts()
    conf([], project='tidings-bench')
    # 14.x reads conf.oslo_messaging_metrics on every call and cast, a group registered only on
    # the global cfg.CONF.
    from oslo_messaging._metrics import client as metrics_client
    conf.register_opts(metrics_client.oslo_messaging_metrics, group='oslo_messaging_metrics')

    if args.scenario in ('call-sequential', 'call-concurrent', 'cast'):
        stats = rpc_scenario(om, conf, args)
    else:
        stats = notify_scenario(om, conf, args)
    try:
        from importlib.metadata import version
        stats['version'] = 'oslo.messaging ' + version('oslo.messaging')
    except Exception:  # noqa: BLE001 - the version is informative only
        pass
    print(json.dumps(stats), flush=True)


if __name__ == '__main__':
    main()
