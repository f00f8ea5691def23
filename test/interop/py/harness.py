"""Shared plumbing for the interop scripts driven by test/interop/*.test.ts.

Protocol: every script writes JSON lines to stdout (one object per line, flushed), reads JSON
lines from stdin where it takes commands, exits when stdin closes or on SIGTERM, and kills
itself after a hard deadline so that nothing outlives a crashed test run.
"""
import json
import os
import signal
import sys
import threading
import traceback

from oslo_config import cfg

import oslo_messaging
from oslo_messaging._metrics import client as metrics_client

_out_lock = threading.Lock()


def emit(obj):
    """Writes one JSON line to stdout; safe from any thread."""
    line = json.dumps(obj, default=repr)
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def log(msg):
    with _out_lock:
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()


def read_config():
    """The script's configuration: a JSON object in argv[1]."""
    if len(sys.argv) < 2:
        raise SystemExit("usage: %s '<json config>'" % sys.argv[0])
    return json.loads(sys.argv[1])


def make_conf(config=None):
    """A private ConfigOpts. 14.0.3 reads conf.oslo_messaging_metrics on every call and cast,
    an option group registered only on the global cfg.CONF, so register it here. The script
    config's "control_exchange", if any, replaces oslo's default exchange "openstack" (the
    process's transports then publish and listen there unless a target names another); its
    "rabbit", if any, is a dict of [oslo_messaging_rabbit] overrides (e.g. {"kombu_compression": "gzip"})."""
    if config and config.get("control_exchange"):
        oslo_messaging.set_transport_defaults(config["control_exchange"])
    rabbit = (config or {}).get("rabbit")
    conf = cfg.ConfigOpts()
    conf([], project="tidings-interop")
    conf.register_opts(metrics_client.oslo_messaging_metrics, group="oslo_messaging_metrics")
    if rabbit:
        from oslo_messaging._drivers import impl_rabbit
        conf.register_opts(impl_rabbit.rabbit_opts, group="oslo_messaging_rabbit")
        for name, value in rabbit.items():
            conf.set_override(name, value, group="oslo_messaging_rabbit")
    return conf


def start_watchdog(seconds):
    """Hard deadline: the process dies even if a broker call hangs."""
    def die():
        log("interop watchdog: %ss deadline passed, exiting" % seconds)
        os._exit(3)
    t = threading.Timer(float(seconds), die)
    t.daemon = True
    t.start()


def install_exit_handlers(on_exit):
    """SIGTERM or stdin EOF run `on_exit` once, then exit 0 (the watchdog still bounds it)."""
    done = threading.Event()
    lock = threading.Lock()

    def run_exit():
        with lock:
            if done.is_set():
                return
            done.set()
        try:
            on_exit()
        except Exception:  # noqa: BLE001 - shutdown must not raise
            log(traceback.format_exc())
        emit({"event": "exited"})
        os._exit(0)

    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=run_exit, daemon=True).start())
    return run_exit


def error_info(exc):
    """A JSON description of an exception as Python saw it."""
    info = {
        "type": type(exc).__name__,
        "module": type(exc).__module__,
        "message": str(exc),
        "is_remote_error": isinstance(exc, oslo_messaging.RemoteError),
        "is_messaging_timeout": isinstance(exc, oslo_messaging.MessagingTimeout),
        "is_no_such_method": isinstance(exc, oslo_messaging.NoSuchMethod),
        "is_unsupported_version": isinstance(exc, oslo_messaging.UnsupportedVersion),
        "is_value_error": isinstance(exc, ValueError),
        "args": [a if isinstance(a, (str, int, float, bool, type(None))) else repr(a) for a in getattr(exc, "args", ())],
    }
    if isinstance(exc, oslo_messaging.RemoteError):
        info["exc_type"] = exc.exc_type
        info["value"] = exc.value
        info["traceback"] = exc.traceback
    for attr in ("method", "version"):
        if hasattr(exc, attr):
            info[attr] = getattr(exc, attr)
    return info
