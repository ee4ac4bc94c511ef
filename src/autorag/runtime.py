"""How a serving process uses the machine's cores: one thread per model call and one BLAS
thread, so that concurrent requests, not each call, spread over the cores.

A server's parallelism is its concurrent requests. A local model that also spreads each
call over every core makes those calls and the requests' other work fight over the cores:
on 2 cores, about twice the CPU per search (``autorag eval api``). So one thread per model
call, unless the operator set it: the local provider then leaves torch's thread count
alone. Effective when the model is first loaded inside, as in ``autorag serve``, which
loads it on the first search.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_limits

MODEL_THREADS_ENV = "OMP_NUM_THREADS"
SERVER_MODEL_THREADS = "1"


@contextmanager
def server_model_threads() -> Iterator[None]:
    """Within: ``MODEL_THREADS_ENV`` as the server sets it, unless it is set already.

    Also one BLAS thread for the in-memory vector scan: numpy is loaded before any
    environment variable could say so, and its idle threads otherwise spin between
    searches (about 40 % of a serving process's CPU on SciFact). Benchmarks measure
    in-process searches inside it, to compare like with like.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        if MODEL_THREADS_ENV in os.environ:
            yield
            return
        os.environ[MODEL_THREADS_ENV] = SERVER_MODEL_THREADS
        try:
            yield
        finally:
            os.environ.pop(MODEL_THREADS_ENV, None)
