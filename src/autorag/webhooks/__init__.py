"""Webhooks (issue 21): events POSTed, signed, to URLs an admin registers."""
