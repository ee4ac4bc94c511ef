"""Background work that survives restarts: a durable queue and a bounded worker pool."""
