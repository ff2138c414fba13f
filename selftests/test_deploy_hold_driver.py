"""scripts/hold-driver (gb10check/deploy/holddriver.py): which packages it holds, read as test_driver_packages_held reads
them; the command; the unattended-upgrades drop-in's text, read back by the check's own parser; and the script itself over
two real sshd on loopback, with stand-ins for dpkg-query, apt-mark and sudo (selftests/fake_node_tools.py): shown first,
--check changes nothing and exits 1, the run holds and verifies, a second run changes nothing."""

import io
import re

import pytest
from rich.console import Console

from gb10check import cli
from gb10check.checks import platform
from gb10check.cluster import load_cluster
from gb10check.deploy import holddriver
from gb10check.errors import UserError
from gb10check.facts import parse
from gb10check.remote import RemoteNode

from .fake_node_tools import A, B, script, sshd_pair

# What gather.DRIVER_PACKAGES prints on a node where both patterns match (held, not held, an old driver's config files).
DPKG = """nvidia-driver-580-open install ok installed
nvidia-driver-570-open deinstall ok config-files
libnvidia-compute-580 install ok installed
"""
HELD = DPKG.replace("install ok installed", "hold ok installed")
UNATTENDED = """Unattended-Upgrade::Allowed-Origins {
        "${distro_id}:${distro_codename}-security";
};
Unattended-Upgrade::Package-Blacklist {
%s
};
"""


def state(dpkg=(0, DPKG, ""), conf=(1, "")):
    return holddriver.read_state(dpkg, conf)


def test_it_holds_what_the_check_warns_about():
    s = state()
    assert s.installed == ["libnvidia-compute-580", "nvidia-driver-580-open"]  # not the 570's leftover config files
    assert s.to_hold == ["libnvidia-compute-580", "nvidia-driver-580-open"]
    [warning] = platform.judge_driver_hold("pgx-32", s.to_hold)
    assert "sudo " + platform.hold_command(s.to_hold) in warning.text  # the check prints the command the step runs
    assert platform.hold_command(s.to_hold) == "apt-mark hold libnvidia-compute-580 nvidia-driver-580-open"
    assert state(dpkg=(0, HELD, "")).to_hold == []
    assert state(dpkg=(0, HELD, "")).installed == ["libnvidia-compute-580", "nvidia-driver-580-open"]
    # Already in 50unattended-upgrades' Package-Blacklist: the check is satisfied, so the step leaves it alone.
    assert state(conf=(0, UNATTENDED % '    "libnvidia-";')).to_hold == ["nvidia-driver-580-open"]


def test_dpkg_query_answers_are_read_as_the_check_reads_them():
    one_pattern_empty = (1, "nvidia-driver-580-open install ok installed\n",
                         "dpkg-query: no packages found matching libnvidia-compute-*\n")
    assert state(dpkg=one_pattern_empty).to_hold == ["nvidia-driver-580-open"]
    nothing = (1, "", "dpkg-query: no packages found matching nvidia-driver-*\n"
                      "dpkg-query: no packages found matching libnvidia-compute-*\n")
    assert state(dpkg=nothing).installed == [] and state(dpkg=nothing).packages == []
    assert state(dpkg=(127, "", "sh: 1: dpkg-query: not found\n")).packages is None  # not a Debian-based image
    with pytest.raises(ValueError, match=r"dpkg-query exited 2: \['dpkg-query: error: cannot access'\]"):
        state(dpkg=(2, "", "dpkg-query: error: cannot access\n"))


def test_blacklist_entries_match_exactly_their_package():
    assert holddriver.blacklist_entry("nvidia-driver-580") == "nvidia-driver-580$"
    assert holddriver.blacklist_entry("libstdc++6") == "libstdc[+][+]6$"  # no backslash: apt's strings take none
    assert holddriver.blacklist_entry("nvidia-firmware-580-580.95.05") == "nvidia-firmware-580-580[.]95[.]05$"
    for name in ("nvidia-driver-580", "libstdc++6", "nvidia-firmware-580-580.95.05"):
        entry = holddriver.blacklist_entry(name)
        assert re.match(entry, name) and not re.match(entry, name + "-open") and not re.match(entry, name[:-1] + "x")


def test_the_drop_in_is_what_the_checks_parser_reads_as_a_blacklist_of_them():
    text = holddriver.render_drop_in(["nvidia-driver-580-open", "libnvidia-compute-580"])
    assert text == (
        "// Written by gb10check (scripts/hold-driver --blacklist): the NVIDIA driver packages installed on this node,\n"
        "// kept out of unattended upgrades (they are held too). Upgrade the driver deliberately, on every node at once,\n"
        "// then reboot. Rewritten by the next run: edit the list there, not here.\n"
        "Unattended-Upgrade::Package-Blacklist {\n"
        '    "libnvidia-compute-580$";\n'
        '    "nvidia-driver-580-open$";\n'
        "};\n")
    read = parse("unattended_upgrades", text)
    assert read.blacklist == ["libnvidia-compute-580$", "nvidia-driver-580-open$"]
    assert platform.unheld_driver_packages(parse("dpkg_query", DPKG), [], read.blacklist) == []
    assert holddriver.DROP_IN == "/etc/apt/apt.conf.d/51gb10check-hold-nvidia"  # after 50unattended-upgrades, which it extends


def test_the_script_shows_holds_verifies_and_then_has_nothing_to_do(tmp_path):
    with sshd_pair(tmp_path, a={"dpkg": HELD}, b={"dpkg": DPKG}) as (cluster, fakes):
        check = script("hold-driver", cluster, "--check")
        assert check.returncode == 1, check.stderr
        assert check.stderr.splitlines() == [
            f"unchanged {A}: libnvidia-compute-580, nvidia-driver-580-open held or blacklisted",
            f"would change {B}: libnvidia-compute-580, nvidia-driver-580-open neither held nor in unattended-upgrades' "
            "Package-Blacklist",
            "  sudo apt-mark hold libnvidia-compute-580 nvidia-driver-580-open"]
        assert not any("apt-mark" in c for c in fakes[B].calls), "--check changes nothing"
        assert fakes[B].calls[0] == "dpkg-query -W -f=${Package} ${Status}\\n nvidia-driver-* libnvidia-compute-*"

        refused = script("hold-driver", cluster)  # a step that changes the cluster asks the gate first
        assert refused.returncode == 3 and refused.stderr.startswith("gate: refused: preflight: no full run"), refused.stderr
        assert not any("apt-mark" in c for c in fakes[B].calls)
        run = script("hold-driver", cluster, "--override", "self-test: fake nodes, no stage run")
        assert run.returncode == 0, run.stderr
        assert run.stderr.splitlines()[0].startswith("gate: OVERRIDDEN (self-test: fake nodes, no stage run); logged in ")
        assert run.stderr.splitlines()[2:] == [
            f"changing {B}: libnvidia-compute-580, nvidia-driver-580-open neither held nor in unattended-upgrades' "
            "Package-Blacklist",
            "  sudo apt-mark hold libnvidia-compute-580 nvidia-driver-580-open",
            f"held {B}: libnvidia-compute-580, nvidia-driver-580-open (dpkg: hold ok installed)"]
        # The bed logs in as root, who needs no sudo for the change.
        assert "apt-mark hold libnvidia-compute-580 nvidia-driver-580-open" in fakes[B].calls
        assert not [c for c in fakes[B].calls if c.startswith("sudo:")]
        assert [row[1] for row in fakes[B].dpkg] == ["hold", "deinstall", "hold"]
        assert not any("apt-mark" in c for c in fakes[A].calls), "a node already held is left alone"

        again = script("hold-driver", cluster, "--check")
        assert again.returncode == 0 and "would change" not in again.stderr, again.stderr
        only = script("hold-driver", cluster, "--node", A, "--check")
        assert only.returncode == 0 and B not in only.stderr, only.stderr
        with pytest.raises(UserError, match=f"no node pgx-99 in the cluster file \\(its nodes: {A}, {B}\\)"):
            with cli.connected(load_cluster(cluster), ["pgx-99"]):
                pass


def test_the_blacklist_drop_in_is_shown_written_and_left_alone_the_second_time(tmp_path):
    with sshd_pair(tmp_path, a={"dpkg": HELD}, b={"dpkg": DPKG}) as (cluster, fakes):
        c = load_cluster(cluster)
        node = RemoteNode(c.node(B), c.ssh)
        drop_in = str(tmp_path / "apt.conf.d" / "51gb10check-hold-nvidia")  # not this machine's /etc/apt
        (tmp_path / "apt.conf.d").mkdir()
        try:
            for expect_rc, expect in ((1, "would change"), (0, "written"), (0, "unchanged")):
                out = io.StringIO()
                rc = holddriver.step([node], check_only=expect == "would change", blacklist=True, drop_in=drop_in,
                                     console=Console(file=out, width=250, soft_wrap=True))
                assert rc == expect_rc and expect in out.getvalue(), out.getvalue()
                if expect == "would change":
                    assert f"would change {B}:{drop_in} (new file)" in out.getvalue()
                    assert '+    "nvidia-driver-580-open$";' in out.getvalue()  # the diff, before anything is written
        finally:
            node.close()
        assert open(drop_in).read() == holddriver.render_drop_in(["libnvidia-compute-580", "nvidia-driver-580-open"])
        assert oct((tmp_path / "apt.conf.d" / "51gb10check-hold-nvidia").stat().st_mode & 0o777) == "0o644"
        assert sum("apt-mark hold" in c for c in fakes[B].calls) == 1  # once (as root: no sudo line)
