"""The pure parts of ``autorag eval api``: statistics, aggregation, goals, query cycling."""

from __future__ import annotations

import pytest

from autorag.errors import InvalidInput
from autorag.eval.api_bench import (
    GOAL_LOAD_P95_MS,
    CpuTimes,
    K,
    LatencyStats,
    QueryCycle,
    Sample,
    check_goals,
    cpu_usage,
    endpoint_request,
    latency_stats,
    scheduled_at,
    summarize_load,
    summarize_overhead,
)
from autorag.models import SearchFilters


def test_latency_stats_interpolates_like_numpy() -> None:
    stats = latency_stats([float(v) for v in range(1, 101)])  # 1..100 ms
    assert stats.count == 100
    assert stats.p50_ms == pytest.approx(50.5)
    assert stats.p95_ms == pytest.approx(95.05)
    assert stats.p99_ms == pytest.approx(99.01)
    assert stats.mean_ms == pytest.approx(50.5)
    assert stats.max_ms == 100.0


def test_latency_stats_ignores_input_order() -> None:
    assert latency_stats([3.0, 1.0, 2.0]) == latency_stats([1.0, 2.0, 3.0])


def test_latency_stats_of_nothing_is_zero() -> None:
    assert latency_stats([]) == LatencyStats(0, 0.0, 0.0, 0.0, 0.0, 0.0)


def test_overhead_is_the_difference_of_the_medians() -> None:
    inside = [10.0, 20.0, 30.0]
    outside = [13.0, 30.0, 31.0]  # per query: +3, +10, +1
    server = [9.0, 19.0, 29.0]
    result = summarize_overhead(inside, outside, server)
    assert result.queries == 3
    assert result.in_process.p50_ms == 20.0
    assert result.endpoint.p50_ms == 30.0
    assert result.overhead_p50_ms == pytest.approx(10.0)
    assert result.paired_overhead_p50_ms == pytest.approx(3.0)  # median of 3, 10, 1
    assert result.server_search_p50_ms == 19.0
    assert result.beyond_server_search_p50_ms == pytest.approx(4.0)  # median of 4, 11, 2


@pytest.mark.parametrize(
    ("inside", "outside", "server"),
    [([], [], []), ([1.0], [1.0, 2.0], [1.0, 2.0]), ([1.0], [1.0], [])],
)
def test_overhead_needs_paired_timings(
    inside: list[float], outside: list[float], server: list[float]
) -> None:
    with pytest.raises(InvalidInput):
        summarize_overhead(inside, outside, server)


def test_load_counts_errors_apart_from_latency_and_throughput() -> None:
    samples = [
        Sample(100.0),
        Sample(200.0),
        Sample(5000.0, "ReadTimeout"),
        Sample(300.0),
        Sample(1.0, "HTTP 500"),
        Sample(2.0, "HTTP 500"),
    ]
    load = summarize_load(samples, clients=3, duration_s=2.0, elapsed_s=2.5)
    assert (load.requests, load.ok, load.errors) == (6, 3, 3)
    assert load.error_kinds == {"HTTP 500": 2, "ReadTimeout": 1}
    assert load.throughput_per_s == pytest.approx(3 / 2.5)  # successful searches only
    assert load.latency.count == 3
    assert load.latency.p50_ms == 200.0
    assert load.latency.max_ms == 300.0  # the timed-out request is not a latency


def test_load_with_no_time_or_no_samples() -> None:
    load = summarize_load([], clients=1, duration_s=1.0, elapsed_s=0.0)
    assert load.throughput_per_s == 0.0
    assert load.latency.count == 0


def test_goals_met_and_missed() -> None:
    fast = summarize_overhead([10.0], [14.0], [9.0])
    healthy = summarize_load([Sample(200.0)] * 50, clients=20, duration_s=1, elapsed_s=1.0)
    assert all(check_goals(fast, healthy).values())

    slow = summarize_overhead([10.0], [16.0], [9.0])
    samples = [Sample(GOAL_LOAD_P95_MS + 1)] * 39 + [Sample(1.0, "HTTP 500")]
    struggling = summarize_load(samples, clients=20, duration_s=1, elapsed_s=1.0)
    assert not any(check_goals(slow, struggling).values())


def test_latency_goal_is_judged_at_the_paced_rate() -> None:
    overhead = summarize_overhead([10.0], [11.0], [9.0])
    # Closed loop: 20 clients always in flight, so 80/s means 250 ms on average.
    closed = summarize_load([Sample(400.0)] * 80, clients=20, duration_s=1, elapsed_s=1.0)
    paced = summarize_load([Sample(60.0)] * 40, clients=20, duration_s=1, elapsed_s=1.0, rate=40.0)
    goals = check_goals(overhead, closed, paced)
    assert goals == {
        "overhead p50 ≤ 5 ms": True,
        "closed loop ≥ 40/s": True,
        "p95 ≤ 250 ms (40/s)": True,
        "no errors": True,
    }
    assert not check_goals(overhead, closed)["p95 ≤ 250 ms (closed loop)"]
    failing = summarize_load(
        [Sample(60.0)] * 39 + [Sample(1.0, "ReadTimeout")],
        clients=20,
        duration_s=1,
        elapsed_s=1.0,
        rate=40.0,
    )
    assert not check_goals(overhead, closed, failing)["no errors"]


def test_goals_are_missed_when_nothing_was_answered() -> None:
    overhead = summarize_overhead([10.0], [11.0], [9.0])
    goals = check_goals(overhead, summarize_load([], clients=20, duration_s=1, elapsed_s=1.0))
    assert [name for name, met in goals.items() if met] == ["overhead p50 ≤ 5 ms"]


def test_paced_clients_take_turns_at_the_total_rate() -> None:
    clients, rate = 4, 40.0
    times = sorted(scheduled_at(c, n, clients, rate) for c in range(clients) for n in range(5))
    assert times == pytest.approx([i / rate for i in range(20)])
    # Each client on its own: one search every clients/rate seconds.
    assert scheduled_at(2, 3, clients, rate) - scheduled_at(2, 2, clients, rate) == (
        pytest.approx(0.1)
    )


def test_query_cycle_goes_round_robin_across_clients() -> None:
    cycle = QueryCycle(["a", "b", "c"])
    assert [cycle.next() for _ in range(7)] == ["a", "b", "c", "a", "b", "c", "a"]
    assert cycle.issued == 7


def test_query_cycle_stops_at_its_limit() -> None:
    cycle = QueryCycle(["a", "b"], limit=3)
    assert [cycle.next() for _ in range(5)] == ["a", "b", "a", None, None]
    assert cycle.issued == 3
    assert QueryCycle(["a"], limit=0).next() is None


def test_query_cycle_refuses_nonsense() -> None:
    with pytest.raises(InvalidInput):
        QueryCycle([])
    with pytest.raises(InvalidInput):
        QueryCycle(["a"], limit=-1)


def test_in_process_request_matches_the_endpoints_default() -> None:
    request = endpoint_request("rising tides")
    assert (request.query, request.k, request.mode, request.per_document) == (
        "rising tides",
        K,
        "hybrid",
        False,
    )
    assert request.filters == SearchFilters()


def test_cpu_usage_splits_the_machine_between_server_client_and_others() -> None:
    before = CpuTimes(server_s=10.0, client_s=1.0, machine_busy_s=100.0)
    after = CpuTimes(server_s=13.0, client_s=1.5, machine_busy_s=105.5)
    usage = cpu_usage(before, after, elapsed_s=2.0, searches=100)
    assert usage.server_cpu_ms_per_search == pytest.approx(30.0)
    assert usage.server_cores == pytest.approx(1.5)
    assert usage.client_cores == pytest.approx(0.25)
    assert usage.other_cores == pytest.approx(1.0)  # 5.5 busy − 3 − 0.5, over 2 s
    idle = cpu_usage(before, before, elapsed_s=0.0, searches=0)
    assert (idle.server_cpu_ms_per_search, idle.server_cores, idle.other_cores) == (0, 0, 0)
