"""A Python oslo.messaging notification listener for interop tests.

argv[1] JSON: {"url", "topics": [...], "pool"?, "exchange"?, "deadline_s"?}
stdout: {"event": "ready"} once listening, then {"event": "notification", "priority", "ctx",
"publisher_id", "event_type", "payload", "metadata"} per notification; stdin EOF or SIGTERM stops it.
"""
import sys

import oslo_messaging

import harness


class Recorder(object):
    pass


def _make_handler(priority):
    def handler(self, ctxt, publisher_id, event_type, payload, metadata):
        harness.emit({"event": "notification", "priority": priority, "ctx": ctxt, "publisher_id": publisher_id,
                      "event_type": event_type, "payload": payload, "metadata": metadata})
        return oslo_messaging.NotificationResult.HANDLED
    return handler


for _p in ("audit", "debug", "info", "warn", "error", "critical", "sample"):
    setattr(Recorder, _p, _make_handler(_p))


def main():
    cfg = harness.read_config()
    harness.start_watchdog(cfg.get("deadline_s", 300))
    conf = harness.make_conf(cfg.get("rabbit"))
    transport = oslo_messaging.get_notification_transport(conf, url=cfg["url"])
    targets = [oslo_messaging.Target(topic=t, exchange=cfg.get("exchange")) for t in cfg["topics"]]
    listener = oslo_messaging.get_notification_listener(
        transport, targets, [Recorder()], executor="threading", pool=cfg.get("pool"))

    def shutdown():
        listener.stop()
        listener.wait()
        transport.cleanup()

    run_exit = harness.install_exit_handlers(shutdown)
    listener.start()
    harness.emit({"event": "ready", "pool": cfg.get("pool")})
    for _ in sys.stdin:
        pass
    run_exit()


if __name__ == "__main__":
    main()
