"""Loopback ports for servers the tests start as subprocesses, which must be named a port
before they listen on it.

Binding port 0 and closing the socket hands out a port of the kernel's ephemeral range,
where any outgoing connection of any process (the other xdist worker, a CLI subprocess,
a browser) may take it before the server binds it. These ports come from below that
range, from a slice of its own for each xdist worker, at random within the slice (so
that another test run on the machine picks elsewhere), and are checked free by binding.
"""

from __future__ import annotations

import os
import random
import socket
import threading
from pathlib import Path

_LOWEST = 10_000  # above the well-known and most registered services' ports
_handed_out: set[int] = set()
_lock = threading.Lock()
_random = random.SystemRandom()


def _ephemeral_low() -> int:
    try:
        low = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0]
    except OSError:
        return 32_768
    return int(low)


def _slice() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker.removeprefix("gw") or 0)
    workers = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")), index + 1)
    high = _ephemeral_low()
    if high - _LOWEST < 1_000 * workers:  # an unusual port range: fall back to the kernel's
        return range(0)
    width = (high - _LOWEST) // workers
    start = _LOWEST + index * width
    return range(start, start + width)


def free_port() -> int:
    """A loopback TCP port that nothing listens on, for a server about to start."""
    ports = _slice()
    with _lock:
        for _ in range(1_000):
            port = _random.choice(ports) if ports else 0
            if port in _handed_out:
                continue
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    continue
                port = int(probe.getsockname()[1])
            _handed_out.add(port)
            return port
    raise RuntimeError("no free loopback port found")
