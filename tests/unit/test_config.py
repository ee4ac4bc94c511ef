from pathlib import Path

import pytest

from autorag.config import load_settings


def test_layers_defaults_file_env_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "autorag.toml"
    config.write_text('search_paths = ["/a"]\n[search]\nrrf_k = 10\nfts_weight = 0.5\n')
    assert load_settings(None).search.rrf_k == 60
    from_file = load_settings(config)
    assert (from_file.search.rrf_k, from_file.search.fts_weight) == (10, 0.5)
    assert from_file.search_paths == ["/a"]
    monkeypatch.setenv("AUTORAG_SEARCH__RRF_K", "20")
    assert load_settings(config).search.rrf_k == 20
    assert load_settings(config).search.fts_weight == 0.5  # env overrides one key only
    flags = load_settings(config, search={"rrf_k": 30}).search
    assert (flags.rrf_k, flags.fts_weight) == (30, 0.5)  # nested keys merge across layers
