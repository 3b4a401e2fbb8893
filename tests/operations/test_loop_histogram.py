"""The loop's histograms export what a Prometheus histogram exports: cumulative ``le`` buckets
(a value equal to a bound counts in that bucket), the count and the sum."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from spades_server.ops.metrics import LoopHistogram


def test_a_loop_histogram_exports_cumulative_le_buckets_count_and_sum() -> None:
    registry = CollectorRegistry()
    histogram = LoopHistogram("test_seconds", "A test.", (0.1, 1.0), registry=registry)
    for value in (0.05, 0.1, 0.5, 1.0, 7.0):
        histogram.observe(value)
    samples = {
        (sample.name, sample.labels.get("le")): sample.value
        for family in registry.collect()
        for sample in family.samples
    }
    assert samples[("test_seconds_bucket", "0.1")] == 2
    assert samples[("test_seconds_bucket", "1.0")] == 4
    assert samples[("test_seconds_bucket", "+Inf")] == 5
    assert samples[("test_seconds_count", None)] == 5
    assert abs(samples[("test_seconds_sum", None)] - 8.65) < 1e-9
    assert b'test_seconds_bucket{le="+Inf"} 5.0' in generate_latest(registry)
