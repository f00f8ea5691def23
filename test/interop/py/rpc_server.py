"""A Python oslo.messaging RPC server for interop tests.

argv[1] JSON: {"url", "topic", "server", "exchange"?, "deadline_s"?}
stdout: {"event": "ready"} once listening; {"event": "request", ...} for every endpoint call
(so casts can be observed); {"event": "exited"} on shutdown. stdin EOF or SIGTERM stops it.
"""
import sys
import threading
import time

import oslo_messaging

import harness


class Echo(object):
    """Default namespace, version 1.3 (so 1.0..1.3 requests match)."""

    target = oslo_messaging.Target(version="1.3")

    def __init__(self, server_name):
        self.server_name = server_name

    def _record(self, method, ctxt, args):
        harness.emit({"event": "request", "method": method, "ctx": ctxt, "args": args, "server": self.server_name})

    def echo(self, ctxt, **kwargs):
        self._record("echo", ctxt, kwargs)
        return {"args": kwargs, "ctx": ctxt, "server": self.server_name}

    def record(self, ctxt, **kwargs):
        """For casts: the test reads the request event."""
        self._record("record", ctxt, kwargs)

    def fail(self, ctxt, message):
        self._record("fail", ctxt, {"message": message})
        raise ValueError(message)

    def sleep(self, ctxt, ms):
        self._record("sleep", ctxt, {"ms": ms})
        time.sleep(ms / 1000.0)
        return ms


class Calc(object):
    """Namespace calc, version 1.2."""

    target = oslo_messaging.Target(namespace="calc", version="1.2")

    def __init__(self, server_name):
        self.server_name = server_name

    def add(self, ctxt, a, b):
        harness.emit({"event": "request", "method": "add", "ctx": ctxt, "args": {"a": a, "b": b}, "server": self.server_name})
        return a + b


def main():
    cfg = harness.read_config()
    harness.start_watchdog(cfg.get("deadline_s", 300))
    conf = harness.make_conf(cfg.get("rabbit"))
    transport = oslo_messaging.get_rpc_transport(conf, url=cfg["url"])
    target = oslo_messaging.Target(topic=cfg["topic"], server=cfg["server"], exchange=cfg.get("exchange"))
    server = oslo_messaging.get_rpc_server(
        transport, target, [Echo(cfg["server"]), Calc(cfg["server"])], executor="threading")

    def shutdown():
        server.stop()
        server.wait()
        transport.cleanup()

    run_exit = harness.install_exit_handlers(shutdown)
    server.start()
    harness.emit({"event": "ready", "server": cfg["server"]})
    for _ in sys.stdin:
        pass
    run_exit()


if __name__ == "__main__":
    main()
