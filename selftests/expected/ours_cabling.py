"""Facts asserted for our own captures of a simulated ring of three (selftests/captures/ip_ethtool/sim-ring3-*), read as
the SSH user (lenovo): `ping -6 -I PORT ff02::1` (gather.commands.port_peers) and `ip -j addr`."""

D = "ours/ip_ethtool/sim-ring3-"

EXPECTED = {
    D + "port-peers-rank0-enp1s0f0np0.txt": (
        "port_peers", {"ipv6_disabled": False, "#responders": 2, "responders.0": "fe80::54c1:52ff:fe9c:479",
                       "responders.1": "fe80::dc56:4eff:fe19:6edf", "refused": False}),
    D + "port-peers-rank0-enp1s0f1np1.txt": (
        "port_peers", {"ipv6_disabled": False, "#responders": 2, "responders.0": "fe80::4c3a:d7ff:fe4c:ad70"}),
    D + "port-peers-rank1-ipv6-off.txt": ("port_peers", {"ipv6_disabled": True, "#responders": 0, "refused": False}),
    D + "port-peers-rank1-link-down.txt": ("port_peers", {"ipv6_disabled": False, "#responders": 0, "refused": False}),
    D + "port-peers-rank1-short-interval.txt": (
        "port_peers", {"ipv6_disabled": False, "#responders": 0, "refused": True}),
    D + "ip-j-addr-rank0.json": ("ip_j_addr", {"#": 6, "2.name": "enp1s0f0np0", "2.addresses.1.address": "fe80::dc56:4eff:fe19:6edf"}),
    D + "ip-j-addr-rank1.json": ("ip_j_addr", {"#": 6, "2.name": "enp1s0f1np1", "2.addresses.1.address": "fe80::54c1:52ff:fe9c:479"}),
    D + "ip-j-addr-rank2.json": ("ip_j_addr", {"#": 6, "4.name": "enp1s0f0np0", "4.addresses.1.address": "fe80::c09c:beff:fe5a:506e"}),
}
