"""The README's Layout is a map of src/autorag that cannot drift: every top-level module
and package is listed, nothing listed is missing, and every file or folder a line names
exists inside the part it describes."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "autorag"
# A line that starts an entry: two spaces, then a package (``name/``) or module (``name.py``).
ENTRY = re.compile(r"^  ([a-z0-9_]+/|[a-z0-9_]+\.py)\s+(.*)$")
# Files and folders named in an entry's description: ``guards.py``, ``skills/``.
NAMED = re.compile(r"\b([a-z0-9_]+\.(?:py|html)|[a-z0-9_]+/)")
NOT_LISTED = {"__init__.py", "__main__.py", "py.typed", "__pycache__"}


def _layout() -> dict[str, str]:
    """Each listed entry and its description (continuation lines joined)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```\n", 2)[1]
    entries: dict[str, str] = {}
    current = None
    for line in block.splitlines()[1:]:  # below "src/autorag/"
        match = ENTRY.match(line)
        if match:
            current = match.group(1)
            assert current not in entries, f"{current} is listed twice"
            entries[current] = match.group(2)
        elif current is not None:
            entries[current] += " " + line.strip()
    return entries


def _top_level() -> set[str]:
    names = set()
    for path in PACKAGE.iterdir():
        if path.name in NOT_LISTED or path.name.startswith("."):
            continue
        if path.is_dir():
            names.add(path.name + "/")
        elif path.suffix == ".py":
            names.add(path.name)
    return names


def test_every_module_and_package_is_listed_and_nothing_else() -> None:
    listed = set(_layout())
    assert listed - _top_level() == set(), "listed in the README but not in src/autorag"
    assert _top_level() - listed == set(), "in src/autorag but missing from the README"


def test_every_file_an_entry_names_exists_in_its_part() -> None:
    for entry, description in _layout().items():
        if not entry.endswith("/"):
            continue
        part = PACKAGE / entry
        present = {p.name for p in part.rglob("*")} | {p.name + "/" for p in part.rglob("*")}
        named = set(NAMED.findall(description))
        missing = {n for n in named if n not in present}
        assert not missing, f"README Layout: {entry} names {sorted(missing)}, not in {part}"
