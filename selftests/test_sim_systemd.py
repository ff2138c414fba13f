"""The simulated nodes with systemd as PID 1 (`gb10check sim up --init systemd`): services are real units
(testinfra's host.service works through the suite's remote layer), systemd-networkd gives the QSFP links
their addresses from the node's netplan file, and the netplan step is proven against it for real:
diff first, install mode 600, `netplan apply`, addresses verified, rollback printed when apply fails."""

import subprocess
import time
from pathlib import Path

import pytest

from gb10check.cluster import load_cluster
from gb10check.remote import RemoteNode
from gb10check.sim import control, scenarios

from .simbed import require_provisioned_sim, run_suite, step

pytestmark = pytest.mark.sim
A, B = "thinkstationpgx-30", "thinkstationpgx-32"
NETPLAN = "/etc/netplan/40-cx7.yaml"


def netplan_step(cluster: Path, *args: str) -> subprocess.CompletedProcess:
    """The netplan step; one that changes the nodes goes past the gate by a logged override (the stages would fail on
    exactly what it repairs)."""
    override = () if "--check" in args else ("--override", "self-test: the netplan step repairs what the stages fail on")
    return step("netplan", cluster, *args, *override)


@pytest.fixture(scope="module")
def systemd_sim():
    require_provisioned_sim()
    start = time.monotonic()
    path = control.up(2, quiet=True, init="systemd")
    yield path, time.monotonic() - start
    control.down(quiet=True)


def test_boots_with_services_as_units(systemd_sim):
    path, took = systemd_sim
    print(f"the pair booted under systemd in {took:.1f} s")  # a figure (shown with -rP), not a timed assertion
    cluster = load_cluster(path)
    for spec in cluster.nodes:
        node = RemoteNode(spec, cluster.ssh)
        try:
            for unit in ("ssh", "docker", "ufw", "systemd-networkd"):
                service = node.host.service(unit)
                assert service.is_running or unit == "ufw" and service.is_enabled, (spec.name, unit)
            assert node.output("systemctl is-system-running").strip() == "running"
            assert node.output("cat /proc/1/comm").strip() == "systemd"
            # networkd gave the links their addresses from the netplan file (nothing assigned them from outside)
            assert "169.254." in node.output("networkctl status enp1s0f0np0 --no-pager")
        finally:
            node.close()


def test_suite_passes_under_systemd(systemd_sim):
    path, _ = systemd_sim
    run = run_suite(path, "-m", "(preflight or network) and not slow")
    failed = {k: o.message for k, o in run.results.items() if o.outcome == "failed"}
    assert run.results and not failed, failed


def test_netplan_step_repairs_installs_applies_and_is_idempotent(systemd_sim):
    path, _ = systemd_sim
    scenarios.apply("netplan-missing-link")  # rank 0's file lost its second link
    scenarios.apply("netplan-644")
    control.node_exec(B, f"rm {NETPLAN} && ip addr flush dev enP2p1s0f0np0")  # rank 1: no file, a link without address

    check = netplan_step(path, "--check")
    assert check.returncode == 1, check.stderr
    assert f"would change {A}:{NETPLAN}\n" in check.stderr and "+    enP2p1s0f0np0:\n+      addresses: [ 192.168.101.10/24 ]" in check.stderr
    assert f"would change {A}:{NETPLAN} mode 644 -> 600" in check.stderr
    assert f"would change {B}:{NETPLAN} (new file)" in check.stderr
    assert f"would change {B}: netplan apply (not up now: enP2p1s0f0np0 192.168.101.11/24)" in check.stderr
    assert control.node_exec(B, f"test -e {NETPLAN} || echo absent").stdout.strip() == "absent", "--check changes nothing"

    first = netplan_step(path)
    assert first.returncode == 0, first.stderr
    assert f"applied {B}: enp1s0f0np0 169.254.159.206/16, enP2p1s0f0np0 192.168.101.11/24 up" in first.stderr
    for n in (A, B):
        assert control.node_exec(n, f"stat -c '%a %U' {NETPLAN}").stdout.strip() == "600 root"
    assert "192.168.101.11/24" in control.node_exec(B, "ip -4 -o addr show enP2p1s0f0np0").stdout

    second = netplan_step(path)
    assert second.returncode == 0 and "changing" not in second.stderr, second.stderr
    run = run_suite(path, "-m", "network", "-k", "netplan_file or link_address or ping")
    assert run.results and {o.outcome for o in run.results.values()} == {"passed"}, run.stdout[-3000:]


def test_netplan_step_prints_the_rollback_when_apply_fails(systemd_sim):
    path, _ = systemd_sim
    # Another file in /etc/netplan that netplan cannot parse: `netplan apply` fails, as it would on the real machine.
    control.node_exec(A, "printf 'network:\\n  ethernets: [oops\\n' > /etc/netplan/50-broken.yaml && chmod 600 /etc/netplan/50-broken.yaml "
                         "&& ip addr flush dev enP2p1s0f0np0")
    out = netplan_step(path)
    control.node_exec(A, "rm /etc/netplan/50-broken.yaml")
    assert out.returncode == 2, out.stderr
    assert f"failed {A}: netplan apply exited 78: /etc/netplan/50-broken.yaml:3:1: Invalid YAML" in out.stderr
    assert f"rollback: sudo install -m 600 -o root -g root {NETPLAN}.gb10check-bak {NETPLAN} && sudo netplan apply" in out.stderr
