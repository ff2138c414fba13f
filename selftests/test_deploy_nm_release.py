"""scripts/nm-release-qsfp (gb10check/deploy/nmrelease.py): which NetworkManager profiles it releases, read as
test_no_dhcp_on_qsfp reads them, and the exact nmcli commands; and the script itself over two real sshd on loopback with
an nmcli stand-in (selftests/fake_node_tools.py; no NetworkManager on this machine): shown first, --check changes nothing
and exits 1, the run releases and verifies, the check's own gather then finds nothing to fail, a second run changes
nothing; a node without NetworkManager has nothing to do."""

import dataclasses
import io

from rich.console import Console

from gb10check import gather
from gb10check.checks import netpath
from gb10check.cluster import load_cluster
from gb10check.deploy import nmrelease
from gb10check.facts import parse
from gb10check.remote import RemoteNode

from .fake_node_tools import A, B, script, sshd_pair
from .test_judges_netpath import NM, QSFP

WIRED2, PORT2, INERT = "2a8e6c14-91b7-3f0d-8e55-6f2a9c3d7b10", "0b5d7e11-2c3a-4f40-9a1b-7e8f9d0c1b2a", "5e7a0c3d-6b1f-4d2e-8f90-a1b2c3d4e5f6"


def test_it_releases_what_the_check_fails_with_the_exact_commands():
    profiles = parse("nmcli_profiles", NM)
    releases = nmrelease.plan(profiles, QSFP)
    assert [(r.profile.uuid, r.netdevs, r.commands) for r in releases] == [
        (WIRED2, ["enp1s0f0np0"], [f"nmcli connection modify {WIRED2} connection.autoconnect no", f"nmcli connection down {WIRED2}"]),
        (PORT2, ["enp1s0f1np1"], [f"nmcli connection modify {PORT2} connection.autoconnect no"]),  # not active: nothing to take down
    ]
    assert [r.profile.uuid for r in nmrelease.plan(profiles, QSFP)] == [f.params["delete"].split()[-1] for f in
                                                                         netpath.judge_nm_dhcp("pgx-30", profiles, QSFP)]
    assert [nmrelease.done_words(r) for r in releases] == ["autoconnect no, down", "autoconnect no"]
    assert nmrelease.describe(releases[0]) == (f"NetworkManager profile 'Wired connection 2' ({WIRED2}) runs DHCP on "
                                               "enp1s0f0np0 (active)")
    assert [r.commands for r in nmrelease.plan(profiles, QSFP, delete=True)] == [[f"nmcli connection delete {WIRED2}"],
                                                                                 [f"nmcli connection delete {PORT2}"]]


def test_what_it_leaves_passes_the_check():
    """The commands' effect (autoconnect off, no longer active) is what the check calls inert."""
    profiles = parse("nmcli_profiles", NM)
    after = dataclasses.replace(profiles, profiles=[dataclasses.replace(p, autoconnect="no", device=None)
                                                    if p.uuid in (WIRED2, PORT2) else p for p in profiles.profiles])
    assert nmrelease.plan(after, QSFP) == [] and netpath.judge_nm_dhcp("pgx-30", after, QSFP) == []
    # Active but already autoconnect off: only taken down.
    half = dataclasses.replace(profiles, profiles=[dataclasses.replace(p, autoconnect="no") for p in profiles.profiles])
    assert [r.commands for r in nmrelease.plan(half, QSFP)] == [[f"nmcli connection down {WIRED2}"]]


def test_a_profile_netplan_generated_is_named_not_changed():
    text = NM.replace("connection.id:netplan-enP2p1s0f0np0", "connection.id:netplan-enP2p1s0f1np1").replace(
        "connection.interface-name:enP2p1s0f0np0\nconnection.autoconnect:yes\nipv4.method:link-local",
        "connection.interface-name:enP2p1s0f1np1\nconnection.autoconnect:yes\nipv4.method:auto")
    [netplan_one] = [r for r in nmrelease.plan(parse("nmcli_profiles", text), QSFP) if r.profile.name.startswith("netplan-")]
    assert netplan_one.from_netplan and netplan_one.commands == []


ETH = {"type": "802-3-ethernet", "method": "auto", "autoconnect": "yes"}


def nm_state():
    return {"running": True, "profiles": [
        {**ETH, "uuid": "7d1f2c58-4a3e-3b6a-9c59-0d4b1e6f8a21", "id": "Wired connection 1", "interface": "", "device": "enP7s7"},
        {**ETH, "uuid": WIRED2, "id": "Wired connection 2", "interface": "enp1s0f0np0", "device": "enp1s0f0np0"},
        {**ETH, "uuid": PORT2, "id": "cx7 port:2", "interface": "enp1s0f1np1", "device": ""},
        {**ETH, "uuid": "c0ffee00-1111-4222-8333-944445555666", "id": "netplan-enP2p1s0f0np0", "interface": "enP2p1s0f0np0",
         "device": "enP2p1s0f0np0", "method": "link-local"},
    ]}


# rank 1's ibdev2netdev: its second port (enp1s0f1np1) is in no cluster link, and is still a QSFP port.
IBDEV = "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\nrocep1s0f1 port 1 ==> enp1s0f1np1 (Down)\nroceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Up)\n"


def check_findings(cluster, name):
    """test_no_dhcp_on_qsfp's judging of the node, on what its gather command reads there now."""
    c = load_cluster(cluster)
    node = RemoteNode(c.node(name), c.ssh)
    try:
        profiles = parse("nmcli_profiles", node.output(gather.NM_PROFILES))
        mapped = parse("ibdev2netdev", node.output(gather.IBDEV2NETDEV))
        return netpath.judge_nm_dhcp(name, profiles, netpath.qsfp_netdevs(node.links, mapped))
    finally:
        node.close()


def test_the_script_shows_releases_verifies_and_then_has_nothing_to_do(tmp_path):
    with sshd_pair(tmp_path, a={}, b={"nm": nm_state(), "ibdev2netdev": IBDEV}) as (cluster, fakes):
        assert [f.where for f in check_findings(cluster, B)] == [f"{B}:enp1s0f0np0", f"{B}:enp1s0f1np1"]
        check = script("nm-release-qsfp", cluster, "--check")
        assert check.returncode == 1, check.stderr
        assert check.stderr.splitlines() == [
            f"nothing to do {A}: NetworkManager not running",
            f"would change {B}: NetworkManager profile 'Wired connection 2' ({WIRED2}) runs DHCP on enp1s0f0np0 (active)",
            f"  sudo nmcli connection modify {WIRED2} connection.autoconnect no",
            f"  sudo nmcli connection down {WIRED2}",
            f"would change {B}: NetworkManager profile 'cx7 port:2' ({PORT2}) runs DHCP on enp1s0f1np1 (autoconnect on)",
            f"  sudo nmcli connection modify {PORT2} connection.autoconnect no"]
        assert fakes[B].nm == nm_state(), "--check changes nothing"

        run = script("nm-release-qsfp", cluster, "--override", "self-test: fake nodes, no stage run")
        assert run.returncode == 0, run.stderr
        assert run.stderr.startswith("gate: OVERRIDDEN (self-test: fake nodes, no stage run)"), run.stderr
        assert run.stderr.splitlines()[-1] == f"released {B}: 'Wired connection 2' (autoconnect no, down); 'cx7 port:2' (autoconnect no)"
        # The bed logs in as root, who needs no sudo for the changes.
        assert not [c for c in fakes[B].calls if c.startswith("sudo:")]
        assert [c for c in fakes[B].calls if c.startswith(("nmcli connection modify", "nmcli connection down"))] == [
            f"nmcli connection modify {WIRED2} connection.autoconnect no",
            f"nmcli connection down {WIRED2}",
            f"nmcli connection modify {PORT2} connection.autoconnect no"]
        after = {p["id"]: (p["autoconnect"], p["device"]) for p in fakes[B].nm["profiles"]}
        assert after == {"Wired connection 1": ("yes", "enP7s7"), "Wired connection 2": ("no", ""), "cx7 port:2": ("no", ""),
                         "netplan-enP2p1s0f0np0": ("yes", "enP2p1s0f0np0")}  # the management port and netplan's untouched
        assert check_findings(cluster, B) == []

        again = script("nm-release-qsfp", cluster, "--check")
        assert again.returncode == 0, again.stderr
        assert again.stderr.splitlines()[-1] == (f"unchanged {B}: no NetworkManager profile runs DHCP on enP2p1s0f0np0, "
                                                 "enp1s0f0np0, enp1s0f1np1")


def test_delete_deletes_them(tmp_path):
    with sshd_pair(tmp_path, a={}, b={"nm": nm_state(), "ibdev2netdev": IBDEV}) as (cluster, fakes):
        c = load_cluster(cluster)
        node = RemoteNode(c.node(B), c.ssh)
        out = io.StringIO()
        try:
            rc = nmrelease.step([node], delete=True, console=Console(file=out, width=250, soft_wrap=True))
        finally:
            node.close()
        assert rc == 0, out.getvalue()
        assert f"  sudo nmcli connection delete {WIRED2}\n" in out.getvalue()
        assert out.getvalue().splitlines()[-1] == f"deleted {B}: 'Wired connection 2' (deleted); 'cx7 port:2' (deleted)"
        assert [p["id"] for p in fakes[B].nm["profiles"]] == ["Wired connection 1", "netplan-enP2p1s0f0np0"]
