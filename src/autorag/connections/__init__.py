"""Model connections: Ollama and OpenAI-compatible servers added at run time.

An admin adds one from the web UI (Settings → Models), the API
(``/api/models/connections``) or ``autorag models add``; the model router offers its
models beside the providers written in autorag.toml, and takes up a change without a
restart. ``store.py`` holds the table and its SQL, ``service.py`` the rules (names,
URLs, sealed keys), the connection test and the detection of a local Ollama.
"""
