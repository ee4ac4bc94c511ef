from autorag.retrieval.fusion import rank_fused, rrf_fuse


def test_rrf_scores_follow_the_seed_formula() -> None:
    fused = rrf_fuse({"vector": [10, 20], "fts": [20, 30]}, k=60)
    assert fused[10].score == 1 / 61
    assert fused[20].score == 1 / 62 + 1 / 61
    assert fused[30].score == 1 / 62


def test_legs_say_which_leg_found_a_chunk() -> None:
    fused = rrf_fuse({"vector": [1, 2], "fts": [2, 3]})
    assert (fused[1].legs, fused[2].legs, fused[3].legs) == ("vector", "both", "fts")
    assert fused[2].ranks == {"vector": 1, "fts": 0}


def test_weights_scale_each_leg() -> None:
    fused = rrf_fuse({"vector": [1], "fts": [2]}, k=0, weights={"vector": 2.0, "fts": 0.5})
    assert fused[1].score == 2.0
    assert fused[2].score == 0.5


def test_a_chunk_listed_twice_by_one_leg_counts_once() -> None:
    fused = rrf_fuse({"fts": [7, 7, 8]}, k=60)
    assert fused[7].score == 1 / 61
    assert fused[8].score == 1 / 63


def test_empty_legs_fuse_to_nothing() -> None:
    assert rrf_fuse({"vector": [], "fts": []}) == {}


def test_ties_break_by_document_then_chunk_index() -> None:
    # Chunks 1 and 2 tie (each first in one leg); 3 and 4 tie at second place.
    fused = rrf_fuse({"vector": [1, 3], "fts": [2, 4]}, k=60)
    position = {1: (7, 0), 2: (5, 3), 3: (5, 9), 4: (5, 2), 99: (1, 0)}
    assert [f.chunk_id for f in rank_fused(fused, position)] == [2, 1, 4, 3]


def test_chunks_the_backstop_dropped_are_left_out() -> None:
    fused = rrf_fuse({"vector": [1, 2]})
    assert [f.chunk_id for f in rank_fused(fused, {2: (1, 0)})] == [2]
