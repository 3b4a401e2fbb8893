"""Ports chosen together for one run's servers are different ports (a probe closed at once lets
the kernel hand the same port out again: 7 repeats in 500 here); an address where nothing
answers stays so while it is held (a port merely found free was once given to a server of a
test running beside, which then answered a test expecting silence)."""

from __future__ import annotations

import errno
import socket

import pytest
import spades_cluster

from tests.support import processes


def test_the_cluster_gets_as_many_different_ports_as_it_asks_for() -> None:
    ports = spades_cluster.free_ports(500)
    assert len(set(ports)) == 500


def test_a_test_gets_as_many_different_ports_as_it_asks_for() -> None:
    ports = processes.free_ports(500)
    assert len(set(ports)) == 500


def test_an_unanswered_address_refuses_connections_and_cannot_be_taken_while_held() -> None:
    with processes.unanswered_address() as address:
        host, port = address.rsplit(":", 1)
        with socket.socket() as caller, pytest.raises(ConnectionRefusedError):
            caller.connect((host, int(port)))
        # As the server binds (SO_REUSEADDR, no SO_REUSEPORT): refused while the port is held.
        with socket.socket() as server:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            with pytest.raises(OSError) as refused:
                server.bind((host, int(port)))
            assert refused.value.errno == errno.EADDRINUSE, refused.value
        # And the kernel's own choices for the other tests' servers never fall on it.
        chosen = processes.free_ports(200)
        assert int(port) not in chosen
