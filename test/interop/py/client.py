"""A Python oslo.messaging client (RPC and Notifier) driven by JSON commands on stdin.

argv[1] JSON: {"url", "deadline_s"?}
stdin, one JSON command per line, each run in its own thread:
  {"id", "op": "call"|"cast", "target": {topic, server?, fanout?, namespace?, version?, exchange?},
   "ctx", "method", "args", "timeout"?, "call_monitor_timeout"?, "allowed_remote_exmods"?}
  {"id", "op": "notify", "driver": "messaging"|"messagingv2", "topics"?, "publisher_id",
   "priority", "event_type", "payload", "ctx"}
stdout: {"event": "ready"}, then {"id", "ok": true, "result"} or {"id", "ok": false, "error": {...}}.
"""
import json
import sys
import threading

import oslo_messaging

import harness

_transports = {}
_lock = threading.Lock()


def rpc_transport(conf, url, allowed):
    key = ("rpc", tuple(allowed))
    with _lock:
        if key not in _transports:
            _transports[key] = oslo_messaging.get_rpc_transport(conf, url=url, allowed_remote_exmods=list(allowed))
        return _transports[key]


def notification_transport(conf, url):
    with _lock:
        if "notify" not in _transports:
            _transports["notify"] = oslo_messaging.get_notification_transport(conf, url=url)
        return _transports["notify"]


def run(conf, url, cmd):
    op = cmd["op"]
    if op in ("call", "cast"):
        t = cmd["target"]
        transport = rpc_transport(conf, url, cmd.get("allowed_remote_exmods") or [])
        target = oslo_messaging.Target(
            topic=t["topic"], server=t.get("server"), fanout=t.get("fanout"),
            namespace=t.get("namespace"), version=t.get("version"), exchange=t.get("exchange"))
        client = oslo_messaging.get_rpc_client(transport, target, timeout=cmd.get("timeout", 10),
                                               call_monitor_timeout=cmd.get("call_monitor_timeout"))
        args = cmd.get("args") or {}
        if op == "call":
            return client.call(cmd.get("ctx") or {}, cmd["method"], **args)
        client.cast(cmd.get("ctx") or {}, cmd["method"], **args)
        return None
    if op == "notify":
        transport = notification_transport(conf, url)
        notifier = oslo_messaging.Notifier(
            transport, publisher_id=cmd["publisher_id"], driver=cmd["driver"],
            topics=cmd.get("topics") or ["notifications"], retry=3)
        getattr(notifier, cmd["priority"])(cmd.get("ctx") or {}, cmd["event_type"], cmd["payload"])
        return None
    raise ValueError("unknown op %r" % op)


def handle(conf, url, line):
    cmd = json.loads(line)
    try:
        result = run(conf, url, cmd)
        harness.emit({"id": cmd.get("id"), "ok": True, "result": result})
    except Exception as exc:  # noqa: BLE001 - every outcome goes back to the test
        harness.emit({"id": cmd.get("id"), "ok": False, "error": harness.error_info(exc)})


def main():
    cfg = harness.read_config()
    harness.start_watchdog(cfg.get("deadline_s", 300))
    conf = harness.make_conf(cfg.get("rabbit"))
    url = cfg["url"]

    def shutdown():
        for t in list(_transports.values()):
            t.cleanup()

    run_exit = harness.install_exit_handlers(shutdown)
    harness.emit({"event": "ready"})
    for line in sys.stdin:
        if line.strip():
            threading.Thread(target=handle, args=(conf, url, line), daemon=True).start()
    run_exit()


if __name__ == "__main__":
    main()
