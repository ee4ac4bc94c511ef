"""Users and access: passwords, bearer tokens, API keys, permissions, login rate limits.

``service`` holds the catalog operations; the API authenticates and authorizes requests
in exactly one place, ``autorag.api.auth``, on top of these.
"""
