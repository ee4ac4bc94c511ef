"""Skills the agent can call: the protocol (``base``) and the workspace search
(``rag_search``). A feature's skill lives with its feature (``chat.skills``,
``p2p.peer_search``) and is registered by name with the chat service."""
