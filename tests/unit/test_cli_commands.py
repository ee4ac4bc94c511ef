"""The ``autorag`` command loads a subcommand's module only when it runs: the table of
commands in ``autorag.cli.main`` must name every command where it is defined."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict

from typer.core import TyperGroup
from typer.testing import CliRunner

from autorag.cli.main import COMMANDS, app, load_commands


def test_the_table_names_every_command_of_every_module() -> None:
    by_module: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    for name, where in COMMANDS.items():
        by_module[where].add(name)
    for (module_name, attribute), names in by_module.items():
        defined = load_commands(module_name, attribute, min(names))
        if attribute == "register":  # all that register() defines, and nothing more
            assert set(defined) == names, module_name
        else:  # a sub-app is one group
            assert list(defined) == list(names) and isinstance(defined[min(names)], TyperGroup)


def test_root_help_lists_every_command_in_table_order() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    listed = [
        line.split()[1]
        for line in result.output.splitlines()
        if line.startswith("│ ") and len(line.split()) > 1 and line.split()[1] in COMMANDS
    ]
    assert listed == list(COMMANDS)


def test_a_command_imports_only_its_own_module() -> None:
    # A fresh interpreter: what `autorag --version` and `autorag status` load.
    probe = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from autorag.cli.main import app\n"
        "CliRunner().invoke(app, ['-w', sys.argv[1], 'status'])\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('autorag.'))))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe, "/nonexistent-workspace"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "autorag.cli.index" in loaded
    for other in ("autorag.cli.chat", "autorag.cli.evaluate", "autorag.cli.p2p", "autorag.api.app"):
        assert other not in loaded
