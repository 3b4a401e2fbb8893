"""A replica's own network: a Linux network namespace joined to the host by a veth pair, which a
test may cut (the host's end taken down) or slow (a tc qdisc on the namespace's end).

The host's end gets ``HOST/30`` and the namespace's end ``HOST+1``; the replica listens on its
end and reaches PostgreSQL and NATS at the host's end (they listen there too), and haproxy and
Prometheus reach the replica through the link. Cut, the link drops every packet both ways (the
host's route to the namespace goes with its end), as a pulled cable or a partition does: no
reset, no refusal, just silence.

Slowing: this kernel (Firecracker's) has no ``sch_netem``, so no ``netem delay``; the link is
slowed by ``htb``, a rate limit on what the replica sends to one port (PostgreSQL's): each of
its packets waits its turn on a narrow link, so every append to the log takes longer, as on a
slow network, while its gRPC streams and NATS are left alone.

Needs root (``ip netns``, ``tc``), as CI has. Names are unique per run (the process id and a
random part) and everything is removed by :meth:`Link.remove` (the namespace takes its end of
the pair with it, and the pair goes whole).
"""

from __future__ import annotations

import ipaddress
import os
import random
import secrets
import subprocess
from dataclasses import dataclass

IP = "/usr/sbin/ip"
TC = "/usr/sbin/tc"
#: Where the links' /30 networks are chosen (a private range no test machine routes).
LINK_RANGE = ipaddress.IPv4Network("10.213.0.0/16")


def run(*argv: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {result.stderr.strip()}")


def why_not_possible() -> str | None:
    """Why no link can be made here (None: it can): it needs root and the ip and tc tools."""
    if os.geteuid() != 0:
        return "a network namespace needs root (CI runs the tests as root)"
    missing = [tool for tool in (IP, TC) if not os.access(tool, os.X_OK)]
    if missing:
        return f"missing {', '.join(missing)} (iproute2)"
    return None


def used_networks() -> set[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    listed = subprocess.run([IP, "-4", "-o", "addr"], capture_output=True, text=True).stdout
    networks = set()
    for line in listed.splitlines():
        fields = line.split()
        if "inet" in fields:
            interface = ipaddress.ip_interface(fields[fields.index("inet") + 1])
            networks.add(ipaddress.ip_network(f"{interface.ip}/30", strict=False))
    return networks


@dataclass
class Link:
    """A namespace and the veth pair to it."""

    namespace: str
    host_end: str
    namespace_end: str
    host_address: str
    namespace_address: str

    @classmethod
    def make(cls) -> Link:
        unique = secrets.token_hex(4)
        taken = used_networks()
        rng = random.Random()
        candidates = list(LINK_RANGE.subnets(new_prefix=30))
        network = next(n for n in (rng.choice(candidates) for _ in range(100)) if n not in taken)
        host, inside = (str(address) for address in list(network.hosts())[:2])
        link = cls(
            f"spades-test-{os.getpid()}-{unique}", f"sp{unique}h", f"sp{unique}n", host, inside
        )
        try:
            link.create_devices()
        except BaseException:
            link.remove()
            raise
        return link

    def create_devices(self) -> None:
        run(IP, "netns", "add", self.namespace)
        run(IP, "link", "add", self.host_end, "type", "veth", "peer", "name", self.namespace_end)
        run(IP, "link", "set", self.namespace_end, "netns", self.namespace)
        run(IP, "addr", "add", f"{self.host_address}/30", "dev", self.host_end)
        run(IP, "link", "set", self.host_end, "up")
        inside = (IP, "netns", "exec", self.namespace, IP)
        run(*inside, "addr", "add", f"{self.namespace_address}/30", "dev", self.namespace_end)
        run(*inside, "link", "set", self.namespace_end, "up")
        run(*inside, "link", "set", "lo", "up")

    def cut(self) -> None:
        """Drop everything on the link, both ways (the host's end down)."""
        run(IP, "link", "set", self.host_end, "down")

    def heal(self) -> None:
        run(IP, "link", "set", self.host_end, "up")

    def slow(self, port: int, rate: str) -> None:
        """Limit what the namespace sends to ``port`` (at the host's end) to ``rate`` (tc's
        units, e.g. "24kbit"); everything else passes at full speed."""
        qdisc = (IP, "netns", "exec", self.namespace, TC)
        device = ("dev", self.namespace_end)
        run(*qdisc, "qdisc", "add", *device, "root", "handle", "1:", "htb", "default", "10")
        run(
            *qdisc,
            "class",
            "add",
            *device,
            "parent",
            "1:",
            "classid",
            "1:10",
            "htb",
            "rate",
            "10gbit",
        )
        run(
            *qdisc,
            "class",
            "add",
            *device,
            "parent",
            "1:",
            "classid",
            "1:20",
            "htb",
            "rate",
            rate,
            "ceil",
            rate,
        )
        run(*qdisc, "filter", "add", *device, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
            "match", "ip", "dport", str(port), "0xffff", "flowid", "1:20")  # fmt: skip

    def unslow(self) -> None:
        run(
            IP,
            "netns",
            "exec",
            self.namespace,
            TC,
            "qdisc",
            "del",
            "dev",
            self.namespace_end,
            "root",
        )

    def remove(self) -> None:
        """Remove the namespace and the pair (whatever of them exists)."""
        subprocess.run([IP, "netns", "del", self.namespace], capture_output=True)
        subprocess.run([IP, "link", "del", self.host_end], capture_output=True)
