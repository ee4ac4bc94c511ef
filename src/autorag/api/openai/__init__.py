"""The OpenAI-compatible API's parts: OpenAI's error body, the request schemas and their
checks, completion and embedding bodies. The routes are ``api/routes/openai_compat.py``."""
