"""Ports chosen together for one run's servers are different ports (a probe closed at once lets
the kernel hand the same port out again: 7 repeats in 500 here)."""

from __future__ import annotations

import spades_cluster

from tests.support import processes


def test_the_cluster_gets_as_many_different_ports_as_it_asks_for() -> None:
    ports = spades_cluster.free_ports(500)
    assert len(set(ports)) == 500


def test_a_test_gets_as_many_different_ports_as_it_asks_for() -> None:
    ports = processes.free_ports(500)
    assert len(set(ports)) == 500
