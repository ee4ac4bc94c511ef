"""``python -m autorag``: the same as the ``autorag`` command."""

from autorag.cli.main import run

run()
