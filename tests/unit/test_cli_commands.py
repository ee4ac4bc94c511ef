"""The ``autorag`` command loads a subcommand's module only when it runs: the table of
commands in ``autorag.cli.main`` must name every command where it is defined, with the
summary its own help starts with."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict

from typer.core import TyperGroup
from typer.testing import CliRunner

from autorag.cli.main import COMMANDS, app, load_commands


def test_the_table_names_every_command_of_every_module() -> None:
    by_module: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
    for name, entry in COMMANDS.items():
        by_module[entry.module, entry.attribute].add(name)
    for (module_name, attribute), names in by_module.items():
        defined = load_commands(module_name, attribute, min(names))
        if attribute == "register":  # all that register() defines, and nothing more
            assert set(defined) == names, module_name
        else:  # a sub-app is one group
            assert list(defined) == list(names) and isinstance(defined[min(names)], TyperGroup)


def _first_paragraph(text: str) -> str:
    return " ".join(text.split("\n\n")[0].split())


def test_each_summary_is_the_first_paragraph_of_the_commands_own_help() -> None:
    for name, entry in COMMANDS.items():
        command = load_commands(entry.module, entry.attribute, name)[name]
        own = _first_paragraph(command.short_help or command.help or "")
        assert entry.summary == own, f"autorag {name}: the table's summary drifted from its help"


def test_root_help_lists_every_command_in_table_order() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    listed = [
        line.split()[1]
        for line in result.output.splitlines()
        if line.startswith("│ ") and len(line.split()) > 1 and line.split()[1] in COMMANDS
    ]
    assert listed == list(COMMANDS)


def _autorag_modules_after(args: list[str]) -> list[str]:
    """The ``autorag.*`` modules a fresh interpreter has loaded after running the CLI."""
    probe = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from autorag.cli.main import app\n"
        "CliRunner().invoke(app, sys.argv[1:])\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('autorag.'))))\n"
    )
    run = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def test_root_help_imports_no_command_module_and_no_settings() -> None:
    loaded = _autorag_modules_after(["--help"])
    commands = {f"autorag.cli.{entry.module}" for entry in COMMANDS.values()}
    assert not commands & set(loaded)
    assert "autorag.config" not in loaded  # pydantic-settings: a third of a second


def test_a_command_imports_only_its_own_module() -> None:
    loaded = _autorag_modules_after(["-w", "/nonexistent-workspace", "status"])
    assert "autorag.cli.index" in loaded
    for other in ("autorag.cli.chat", "autorag.cli.evaluate", "autorag.cli.p2p", "autorag.api.app"):
        assert other not in loaded
