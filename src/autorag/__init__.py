"""AutoRAG: a local-first knowledge server with hybrid retrieval and cited answers."""

__version__ = "0.1.0"
