"""Reachability over each link: ping, SSH between nodes as the same user, and the ports vLLM needs really open.

The probes run once per run, on every node at once (gb10check/gather/probes.py); each test judges its own path's result."""

import pytest

from gb10check.checks import reach
from gb10check.gather.probes import CONNECT_TIMEOUT_S
from gb10check.remedies import Code
from gb10check.verdict import not_checked, report

pytestmark = pytest.mark.network


def probed(path):
    return path.src.fleet.probes().result(path.src.name, path.src_link.netdev, path.dst.name, path.dst_link.netdev)


def test_ping(path):
    res = probed(path)
    report(reach.judge_ping(path.src.name, path.src_link, path.dst.name, path.dst_link, *res.ping))


def test_ssh_mesh(path):
    res = probed(path)
    report(reach.judge_ssh_mesh(path.src.name, path.dst.name, path.dst_link, path.src.ssh.user, *res.ssh))


def test_port_open(path, required_port, cluster):
    """A listener on the target's link address, a connection from the peer over the link: a firewall drop shows."""
    res = probed(path)
    ok, why = res.port(required_port)
    if ok != 0 and res.ping[0] != 0:  # ufw lets ICMP echo through: no ping means the link, not the firewall
        not_checked(Code.PREREQUISITE, f"{path.src.name}:{path.src_link.netdev}", f"whether {path.dst.name} port "
                    f"{required_port} is open: {path.dst_link.ip} is not reached at all", "a peer that answers a plain ping",
                    check="test_ping")
    source = next((str(s) for s in cluster.expect.firewall.sources if path.src_link.address.ip in s),
                  str(path.src_link.address.network))
    report(reach.judge_port(path.src.name, path.src_link, path.dst.name, path.dst_link, required_port, ok, why, CONNECT_TIMEOUT_S,
                            source))
