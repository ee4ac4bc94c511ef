"""How large a page and an attachment may be: the service checks them, an import reads
no further (a module of its own, so both import it without importing each other)."""

MAX_BODY_BYTES = 2 * 1024 * 1024
MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024
