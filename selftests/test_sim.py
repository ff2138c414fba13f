"""The simulated cluster: up, SSH through the suite's remote layer, scenarios visible, down leaves nothing."""

import subprocess
import sys
from pathlib import Path

import pytest

from gb10check.cluster import load_cluster
from gb10check.remote import RemoteNode
from gb10check.sim import control, scenarios, topology

from .conftest import read_capture
from .inner_pytest import run_pytest
from .simbed import require_sim

pytestmark = pytest.mark.sim


NODE_SIDE = {"enP7s7", *(netdev for netdev, _ in topology.CABLED + topology.UNCABLED)}


def host_snapshot() -> dict:
    """What this sim instance has on the machine (the other xdist worker's instance comes and goes meanwhile): its
    namespaces, links, mounts and cgroups by name, its nodes' inits by their spec's folder. A process it left behind
    would keep its node's cgroup from being removed."""
    def lines(*argv):
        return sorted(subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.splitlines())

    p, d = topology.prefix(), str(control.state_dir())
    return {
        "netns": [l for l in lines("ip", "netns", "list") if l.startswith(p)],
        # and the nodes' side of a veth, which must never be left in (or fall back to) the machine's namespace
        "links": [name for l in lines("ip", "-o", "link", "show") if (name := l.split(":")[1].strip().split("@")[0]).startswith(p)
                  or name in NODE_SIDE],
        "mounts": [m for m in sorted(Path("/proc/self/mounts").read_text().splitlines())
                   if (at := m.split()[1]) == d or at.startswith((f"{d}/", f"/run/netns/{p}"))],
        "sim_processes": [l for l in lines("ps", "-eww", "-o", "args") if "gb10check/sim/boot.py" in l and f"{d}/" in l],
        "cgroups": sorted(str(g) for g in Path("/sys/fs/cgroup").glob(f"*/{p}*")),
    }


@pytest.fixture(scope="module")
def sim():
    require_sim()
    control.down(quiet=True)
    before = host_snapshot()
    path = control.up(2, quiet=True)
    yield path, before
    control.down(quiet=True)


def test_nodes_answer_through_the_remote_layer(sim):
    path, _ = sim
    cluster = load_cluster(path)
    for spec in cluster.nodes:
        node = RemoteNode(spec, cluster.ssh)  # host keys verified against the sim's known_hosts
        assert node.output("hostname").strip() == spec.name
        assert node.output("id -un").strip() == "lenovo"
        assert node.output("sudo -n true; echo $?").strip() == "0"
        node.close()


def test_cluster_file_collects(sim):
    path, _ = sim
    proc = run_pytest(["-p", "no:cacheprovider", "--collect-only", "-q", "-m", "preflight or network", f"--cluster={path}"],
                      timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "test_ssh_user[thinkstationpgx-32]" in proc.stdout


def test_nodes_are_isolated_and_have_no_default_route(sim):
    for name in control.nodes():
        assert control.node_exec(name, "ip route show default").stdout == ""
        assert control.node_exec(name, "cat /proc/sys/net/ipv4/ip_forward").stdout.strip() == "0"
        # own hostname, own /etc, own processes: PID 1 is the node's init
        assert control.node_exec(name, "hostname").stdout.strip() == name
        assert "boot.py" in control.node_exec(name, "cat /proc/1/cmdline | tr '\\0' ' '").stdout
    assert Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() == "0"


def test_qsfp_cable_carries_traffic(sim):
    a, b = control.nodes()
    assert control.node_exec(a, "ping -c 1 -W 2 -I enp1s0f0np0 169.254.159.206").returncode == 0
    assert control.node_exec(a, "ping -c 1 -W 2 -I enP2p1s0f0np0 192.168.101.11").returncode == 0


def test_standin_nvidia_smi_has_the_real_layout(sim):
    """Same lines, same widths, same column separators as a real GB10's nvidia-smi (values differ)."""
    ours = control.node_exec(control.nodes()[0], "nvidia-smi").stdout.splitlines()[1:]
    real = read_capture("nvidia_smi/gb10-580.159.03-with-processes-jethac.txt").splitlines()[1:]
    for mine, theirs in zip(ours[:11], real[:11]):
        assert len(mine) == len(theirs)
        assert [i for i, c in enumerate(mine) if c == "|"] == [i for i, c in enumerate(theirs) if c == "|"]


def test_standin_ibdev2netdev_matches_the_capture(sim):
    ours = control.node_exec(control.nodes()[0], "ibdev2netdev").stdout
    real = read_capture("ibdev2netdev/gb10-blog-port0-up.txt").split("\n", 1)[1]
    assert ours == real


def test_ufw_drop_is_a_real_drop(sim):
    control.up(2, quiet=True)
    a, b = control.nodes()
    listen = "nohup python3 -c \"import socket;s=socket.create_server(('',29501));s.settimeout(8);s.accept()\" >/dev/null 2>&1 &"
    probe = "python3 -c \"import socket;socket.create_connection(('169.254.159.206',29501),timeout=2)\""
    control.node_exec(b, listen)
    assert control.node_exec(a, "sleep 0.3;" + probe, check=False).returncode == 0
    scenarios.apply("ufw-no-qsfp-rules")
    control.node_exec(b, listen)
    failed = control.node_exec(a, "sleep 0.3;" + probe, check=False)
    assert failed.returncode != 0 and "timed out" in failed.stderr


def test_down_leaves_nothing_and_is_idempotent(sim):
    _, before = sim
    control.up(2, quiet=True)
    control.down(quiet=True)
    control.down(quiet=True)
    assert host_snapshot() == before
    assert not control.state_dir().exists()


def test_down_after_a_failed_up_cleans_up(sim, monkeypatch):
    _, before = sim
    monkeypatch.setattr(control, "BOOT", Path("/nonexistent/boot.py"))
    with pytest.raises(control.SimError, match="did not boot"):
        control.up(2, quiet=True)
    assert host_snapshot() == before


def test_without_root_it_refuses(sim):
    proc = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-m",
                           "gb10check", "sim", "down"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "the simulated cluster needs root" in proc.stderr


def test_eight_nodes_behind_a_switch(sim):
    try:
        path = control.up(8, quiet=True)
        cluster = load_cluster(path)
        assert len(cluster.nodes) == 8 and len(cluster.link_pairs()) == 2 * 28
        last = control.nodes()[-1]
        assert control.node_exec(last, "ping -c 1 -W 2 169.254.100.10").returncode == 0
        assert control.node_exec(last, "ping -c 1 -W 2 192.168.101.10").returncode == 0
    finally:
        control.up(2, quiet=True)
