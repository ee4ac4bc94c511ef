"""Test doubles: real HTTP servers that speak model servers' wire formats from a script.

    from tests.doubles import ScriptedOpenAI, Text, Tool

    with ScriptedOpenAI([Tool("rag_search", {"query": "refunds"}), Text("30 days [1]")]) as s:
        ...  # point a provider at s.base_url; read s.requests afterwards

See ``tests.doubles.script`` for the turns a script is made of.
"""

from tests.doubles.ollama_server import OllamaModel, ScriptedOllama
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import (
    EXHAUSTED,
    Error,
    Hang,
    Respond,
    ScriptedServer,
    Seen,
    Text,
    Tool,
    ToolCalls,
    Turn,
    split_tokens,
)

__all__ = [
    "EXHAUSTED",
    "Error",
    "Hang",
    "OllamaModel",
    "Respond",
    "ScriptedOllama",
    "ScriptedOpenAI",
    "ScriptedServer",
    "Seen",
    "Text",
    "Tool",
    "ToolCalls",
    "Turn",
    "split_tokens",
]
