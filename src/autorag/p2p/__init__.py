"""Peer queries over SimpleX: the trusted registry, the transport, start-up (seed 000)."""
