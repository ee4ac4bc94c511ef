"""The rerank stage (issue 23): a second look at the first-stage hits of a search.

A ``Reranker`` scores passages against a query; ``registry`` builds one by name from
``[search.rerank]``; ``stage.RerankStage`` runs it inside a search within a time bound,
keeping the first-stage order when it fails and sending a hosted reranker nothing whose
source policy does not let it leave (see ``stage``).
"""

from autorag.rerank.base import Reranker

__all__ = ["Reranker"]
