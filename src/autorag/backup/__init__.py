"""Backups and restores (issue 20, seed 003): encrypted archives of a workspace,
scheduled, verified and put at local or remote destinations."""
