"""The judging half of the checks on captured real outputs: no machine needed, milliseconds each."""

import pytest

from gb10check.checks import firewall, host, links
from gb10check.cluster import Link
from gb10check.facts import parse
from gb10check.remedies import REMEDIES, Code

from .conftest import read_capture

PORT0 = [Link(netdev="enp1s0f0np0", rdma_device="rocep1s0f0", address="192.168.100.10/24"),
         Link(netdev="enP2p1s0f0np0", rdma_device="roceP2p1s0f0", address="192.168.100.14/24")]


def codes(findings):
    return [(f.code, f.where, f.warning) for f in findings]


def test_port0_cabled_machine_passes_and_port1_cabled_fails():
    good = parse("ibdev2netdev", read_capture("ibdev2netdev/gb10-blog-port0-up.txt"))
    assert links.judge_ibdev2netdev("gb10-1", PORT0, good) == []
    other = parse("ibdev2netdev", read_capture("ibdev2netdev/dgxspark-playbook-switch-port1-up.txt"))
    found = links.judge_ibdev2netdev("spark-1", PORT0, other)
    assert codes(found) == [(Code.LINK_DOWN, "spark-1:enp1s0f0np0", False), (Code.LINK_DOWN, "spark-1:enP2p1s0f0np0", False)]
    assert "fix: check the QSFP cable on spark-1 enp1s0f0np0" in found[0].text


def test_gid_index_3_is_roce_v2_on_the_blog_machine():
    gids = parse("show_gids", read_capture("rdma_gids_devinfo/gb10-blog-show_gids-redacted.txt"))
    from gb10check.facts.rdma import IbPort

    ports = [IbPort("rocep1s0f0", 1, "ACTIVE", gids=[g for g in gids if g.rdma_device == "rocep1s0f0"])]
    assert links.judge_gid("gb10-1", PORT0[0], ports, 3, "RoCE v2") == []
    wrong = links.judge_gid("gb10-1", PORT0[0], ports, 2, "RoCE v2")
    assert wrong[0].text.startswith("[gid-not-roce-v2] gb10-1:rocep1s0f0: saw GID 2 is RoCE v1 192.168.100.10; "
                                    "RoCE v2 with 192.168.100.10 is at index 3")
    assert "NCCL_IB_GID_INDEX=3" in wrong[0].text


def test_speed_below_profile_is_a_warning():
    eth = parse("ethtool", read_capture("ip_ethtool/dgxspark-playbook-switch-ethtool-speed-grep-100G.txt"))
    link = Link(netdev="enp1s0f1np1", rdma_device="rocep1s0f1", address="169.254.35.62/16")
    assert codes(links.judge_speed("spark-1", link, eth, 200000)) == [(Code.LINK_SPEED, "spark-1:enp1s0f1np1", True)]
    eth200 = parse("ethtool", read_capture("ip_ethtool/dgxspark-playbook-switch-ethtool-speed-grep-200G.txt"))
    assert links.judge_speed("spark-1", link, eth200, 200000) == []


@pytest.mark.parametrize("name", ["nvidia_smi/nvml-mismatch-lib-580.178-truenas-issue19.txt",
                                  "nvidia_smi/nvml-mismatch-with-lib-version-570.124-tinygrad-ogkm-issue47.txt"])
def test_nvml_mismatch_is_named_as_such(name):
    proc = read_capture("nvidia_smi/x86_64-proprietary-proc-driver-nvidia-version-580.173.02-truenas-issue19.txt")
    found = host.judge_driver("truenas", proc, read_capture(name))
    assert codes(found) == [(Code.NVML_MISMATCH, "truenas", False)]
    assert "Driver/library version mismatch" in found[0].text and "kernel module 580.173.02" in found[0].text
    assert "fix: reboot truenas" in found[0].text


def test_driver_parity_on_a_gb10():
    proc = read_capture("nvidia_smi/gb10-proc-driver-nvidia-version-580.126.09-idx52511083852.txt")
    assert host.judge_driver("edgexpert", proc, "580.126.09\n") == []
    found = host.judge_driver("edgexpert", proc, "580.173.02\n")
    assert found[0].text.startswith("[driver-mismatch] edgexpert: saw kernel module 580.126.09; expected user-mode driver 580.173.02")
    assert host.installed_driver(read_capture("nvidia_smi/nvml-mismatch-lib-580.178-truenas-issue19.txt")) == "580.178"


def test_firewall_without_qsfp_rules():
    status = parse("ufw_status", read_capture("ufw/ufw-status-verbose-ufw-docker-issue21.txt"))
    rules = parse("ufw_user_rules", read_capture("ufw/user.rules-fresh-install-template-ufw-conf.txt"))
    found = firewall.judge("pgx", status, rules, "ENABLED=yes\n", "", ["169.254.0.0/16"], ["20001/tcp"])
    assert codes(found) == [(Code.UFW_SOURCE, "pgx", False), (Code.UFW_PORT, "pgx", False)]
    assert "fix: sudo ufw allow from 169.254.0.0/16 on pgx" in found[0].text


def test_firewall_private_ranges_allowed():
    status = parse("ufw_status", read_capture("ufw/ufw-upstream-testsuite-status-plain-padded.txt"))
    assert status.allows("192.168.101.0/24") and not status.allows("169.254.0.0/16")


def test_every_code_has_a_remedy_and_is_used():
    import pathlib

    source = "".join(p.read_text() for p in pathlib.Path(__file__).resolve().parent.parent.glob("*/**/*.py")
                     if "selftests" not in p.parts)
    assert set(REMEDIES) == set(Code)
    unused = [c.name for c in Code if f"Code.{c.name}" not in source]
    assert unused == []


# ---- container runtime and image -------------------------------------------------------------

def test_compose_major_reads_v2_v1_and_nothing():
    from gb10check.facts.docker import compose_major

    assert compose_major("Docker Compose version v2.29.7\n") == 2
    assert compose_major("Docker Compose version 2.26.1-4\n") == 2
    assert compose_major("docker-compose version 1.29.2, build unknown\n") == 1
    assert compose_major("docker: unknown command: docker compose\n\nRun 'docker --help' for more information\n") is None


def test_docker_ps_lines_and_garbled():
    from gb10check.facts._text import ParseError
    from gb10check.facts.docker import parse_ps

    rows = parse_ps("gb10-vllm\tvllm/vllm-openai:v0.11\trunning\tUp 2 hours\n", "gb10-vllm\t96.1GiB / 105GiB\n")
    assert rows[0].name == "gb10-vllm" and rows[0].state == "running" and rows[0].memory == "96.1GiB / 105GiB"
    assert parse_ps("") == []  # no container running
    with pytest.raises(ParseError, match="docker_ps: expected NAME<TAB>IMAGE"):
        parse_ps("CONTAINER ID   IMAGE   COMMAND\n")


def test_image_for_another_architecture_fails_naming_both():
    from gb10check.checks.container import judge_image
    from gb10check.facts.docker import Image

    amd = Image("sha256:1", ["vllm:gb10"], "amd64", "linux", ["sha256:a"], 10.0)
    [f] = judge_image("thinkstationpgx-32", "vllm:gb10", amd, "", "aarch64\n")
    assert "saw vllm:gb10 is linux/amd64; expected arm64 like the node (aarch64)" in f.text
    assert "use an image built for arm64 on thinkstationpgx-32" in f.text
    assert judge_image("n", "vllm:gb10", Image("sha256:1", [], "arm64", "linux", [], None), "", "aarch64") == []
