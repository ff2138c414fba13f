"""`ss -tanpH` / `ss -tanp` (iproute2): the node's TCP sockets, one per line.

Columns: State Recv-Q Send-Q Local-Address:Port Peer-Address:Port [Process]. Addresses are IPv4 (`10.0.0.1:22`), IPv6 in
brackets (`[fe80::1%enp1s0f0np0]:5557`, `[::ffff:192.168.101.11]:5557`: an IPv4 peer of a dual-stack socket, read as
its IPv4 address) or a wildcard (`*`, `0.0.0.0`, `[::]`). The process column (`users:(("python3",pid=585,fd=4),...)`)
is there only when ss ran with -p as root; without it the process is unknown (None), never guessed. A header line
(`State Recv-Q ...`) is skipped; any other line that is not a socket is refused with the line. Sockets come back in
the order of their addresses (ss's own order is its hash tables'), so a reordered paste reads the same.
"""

import ipaddress
import re
from dataclasses import dataclass

from ._text import ParseError, parser

STATES = {"ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1", "FIN-WAIT-2", "TIME-WAIT", "UNCONN", "CLOSE-WAIT", "LAST-ACK",
          "LISTEN", "CLOSING", "CLOSED"}
ENDPOINT = re.compile(r"^(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^\s\[\]]*?)):(?P<port>\d+|\*)$")
USER = re.compile(r'\("(?P<name>[^"]*)",pid=(?P<pid>\d+)')


@dataclass(frozen=True)
class Socket:
    state: str
    local: str  # address as written, IPv4-mapped IPv6 as its IPv4, zone (%dev) dropped
    local_port: int | None  # None: a wildcard port (*)
    peer: str
    peer_port: int | None
    processes: tuple[tuple[str, int], ...] = ()  # (name, pid) per owner; empty: ss did not say (no -p or not root)

    @property
    def process(self) -> str | None:
        return ", ".join(f"{name} (pid {pid})" for name, pid in self.processes) or None

    def __str__(self) -> str:
        return f"{_shown(self.local, self.local_port)} -> {_shown(self.peer, self.peer_port)}"


def _shown(host: str, port: int | None) -> str:
    return f"{f'[{host}]' if ':' in host else host}:{'*' if port is None else port}"


def _address(text: str, line: str) -> tuple[str, int | None]:
    m = ENDPOINT.match(text)
    if not m:
        raise ParseError("ss", "an address:port", line)
    host = m["v6"] if m["v6"] is not None else m["host"]
    host = host.split("%", 1)[0]  # a zone (fe80::1%eth0) or a bound device (0.0.0.0%lo)
    if host not in ("*", ""):
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            raise ParseError("ss", f"an IP address (saw {host!r}: was ss run without -n?)", line) from None
        host = str(ip.ipv4_mapped) if ip.version == 6 and ip.ipv4_mapped else str(ip)
    return host or "*", None if m["port"] == "*" else int(m["port"])


EXPECTED = "State Recv-Q Send-Q Local:Port Peer:Port [users:((...))] lines (ss -tanp)"


@parser
def parse(text: str) -> list[Socket]:
    if not text.strip():
        raise ParseError("ss", EXPECTED, text)
    sockets = []
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0] == "State" or (fields[0] == "Netid" and "State" in fields):
            continue
        if fields[0] in ("tcp", "tcp6"):  # ss -a without -t prints a Netid column first
            fields = fields[1:]
        if fields[0] not in STATES or len(fields) < 5 or not fields[1].isdigit() or not fields[2].isdigit():
            raise ParseError("ss", EXPECTED, line)
        local, local_port = _address(fields[3], line)
        peer, peer_port = _address(fields[4], line)
        users = " ".join(fields[5:])
        procs = tuple((m["name"], int(m["pid"])) for m in USER.finditer(users))
        socket = Socket(fields[0], local, local_port, peer, peer_port, procs)
        # A connection is one 4-tuple, and an owned socket names its fd: the same line twice is a paste's repeat. Only
        # listeners sharing a port (SO_REUSEPORT) read alike, when ss could not name their owners.
        if socket in sockets and (procs or socket.state not in ("LISTEN", "UNCONN")):
            raise ParseError("ss", f"{EXPECTED}, each socket once", line)
        sockets.append(socket)
    return sorted(sockets, key=lambda s: (s.local, s.local_port or -1, s.peer, s.peer_port or -1, s.state))
