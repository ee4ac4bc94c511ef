"""Owner-only paths: the modes set at creation and the repair of loosened ones."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from autorag.private_files import (
    create_private,
    make_private_dir,
    owner_only_umask,
    tighten,
    tighten_tree,
    touch_private,
    write_private,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture(autouse=True)
def loose_umask() -> Iterator[None]:
    """The usual 022: what the helpers do must not depend on the process umask."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_created_files_and_folders_are_owner_only(tmp_path: Path) -> None:
    folder = make_private_dir(tmp_path / "a" / "b" / "c")
    assert [_mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3
    with create_private(folder / "upload.bin") as handle:
        handle.write(b"data")
    touch_private(folder / "lock")
    write_private(folder / "secret", b"s", replace=False)
    assert {_mode(folder / n) for n in ("upload.bin", "lock", "secret")} == {0o600}
    with pytest.raises(FileExistsError):
        create_private(folder / "upload.bin")


def test_make_private_dir_leaves_a_chosen_existing_folder_alone(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    make_private_dir(shared, tighten_existing=False)
    assert _mode(shared) == 0o755
    make_private_dir(shared / "mine", tighten_existing=False)  # created: private
    assert _mode(shared / "mine") == 0o700
    make_private_dir(shared)
    assert _mode(shared) == 0o700


def test_loosened_modes_are_repaired_and_reported(tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "file").write_bytes(b"x")
    (root / "top").write_bytes(b"y")
    for path, mode in ((root, 0o755), (root / "sub", 0o777), (root / "sub" / "file", 0o644)):
        path.chmod(mode)
    (root / "top").chmod(0o640)
    repaired = tighten_tree(root)
    assert len(repaired) == 4 and any("0640" in m and "top" in m for m in repaired)
    assert (_mode(root), _mode(root / "sub")) == (0o700, 0o700)
    assert (_mode(root / "sub" / "file"), _mode(root / "top")) == (0o600, 0o600)
    assert tighten_tree(root) == []  # nothing left to repair
    assert touch_private(root / "top") is None
    (root / "top").chmod(0o604)
    assert touch_private(root / "top") is not None and _mode(root / "top") == 0o600


def test_links_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not ours")
    outside.chmod(0o644)
    root = tmp_path / "data"
    root.mkdir()
    (root / "link").symlink_to(outside)
    tighten_tree(root)
    assert tighten(root / "link") is None and _mode(outside) == 0o644
    assert tighten(tmp_path / "missing") is None


def test_owner_only_umask_keeps_stricter_bits_and_says_the_old_one() -> None:
    os.umask(0o027)
    try:
        assert owner_only_umask() == 0o027
        assert os.umask(0o022) == 0o077
        os.umask(0o277)
        owner_only_umask()
        assert os.umask(0o022) == 0o277
    finally:
        os.umask(0o022)
