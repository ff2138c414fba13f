"""Each way a check used to pass without having looked, or blamed the cluster for the suite's own trouble, now gives the
right outcome: on real outputs (the simulated pair's and the H200 machine's recordings, replayed) and on the judges."""

import json
from pathlib import Path

from gb10check.checks import disk, links, platform
from gb10check.cluster import Link
from gb10check.facts import ip
from gb10check.gather import recording, registry
from gb10check.gather.batch import Output
from gb10check.remedies import NOT_CHECKED, Code

from .test_facts_property import H200, READING, RECORDING, arguments, run_check

LINK = Link(netdev="enp1s0f0np0", rdma_device="rocep1s0f0", address="169.254.94.252/16")
OTHER = Link(netdev="enP2p1s0f0np0", rdma_device="roceP2p1s0f0", address="192.168.101.10/24")


def sim_interfaces() -> list:
    """The simulated head's `ip -j addr`, as recorded: its real interfaces."""
    got = json.loads(RECORDING.read_text())
    head = got["cluster"]["nodes"][0]["name"]
    return ip.parse_json(next(o["stdout"] for o in got["facts"][head] if o["fact"] == "ip_addr"))


def messages(check: str, path: Path) -> list[tuple[str, str]]:
    """(outcome, message) of each parametrization of the check on a replayed recording."""
    fleet = recording.replay(json.loads(path.read_text()))
    fn = next(f for cid, f in READING.items() if cid.endswith("::" + check))
    return [run_check(fn, kw, fleet.cluster) for kw in arguments(fn, fleet)]


def without(path: Path, tool: str, tmp_path: Path) -> Path:
    """The recording with `tool` not installed on every node: each command that runs it exits 127, as sh says it."""
    got = json.loads(path.read_text())
    for outputs in got["facts"].values():
        for o in outputs if isinstance(outputs, list) else []:
            if o["command"].split()[0] == tool:
                o.update(rc=127, stdout="", stderr=f"sh: 1: {tool}: not found\n")
    out = tmp_path / f"without-{tool}.json"
    out.write_text(json.dumps(got))
    return out


def test_a_missing_nvidia_smi_is_not_installed_in_every_driver_check(tmp_path):
    # The H200's recording without nvidia-smi: the driver checks say the tool is not installed (one cause with the GPU
    # name check, the same fix), never "read its error" nor a missing driver.
    path = without(H200, "nvidia-smi", tmp_path)
    said = {check: messages(check, path) for check in ("test_gpu_name", "test_driver_parity", "test_driver_version")}
    for check, [(verdict, message)] in said.items():
        assert verdict == "not checked", (check, message)
        assert "[tool-missing] h200: could not check: `nvidia-smi` is not installed" in message, (check, message)
        assert "install the NVIDIA driver's utilities" in message and "read its error" not in message, (check, message)
    assert len({m.split("\n", 1)[1] for [(_, m)] in said.values()}) == 1  # the same fix: told once


def test_a_missing_ibdev2netdev_is_not_installed(tmp_path):
    path = without(RECORDING, "ibdev2netdev", tmp_path)
    found = messages("test_rdma_link_up", path)
    assert found and all(v == "not checked" and "`ibdev2netdev` is not installed" in m and "mlnx-tools" in m and
                         "read its error" not in m for v, m in found), found


def test_disk_space_with_an_unknown_need_is_not_checked():
    free = {"the Hugging Face cache": ("/", 10 * disk.GIB), "docker's data": ("/", 10 * disk.GIB)}
    [f] = disk.judge_disk("spark-1", free, {"the Hugging Face cache": None, "docker's data": 0}, 0,
                          {"the Hugging Face cache": ("the size of org/model is unknown (no index)", "download its index")})
    assert f.code == Code.UNKNOWN_NEED and f.not_checked
    assert "but the size of org/model is unknown" in f.seen and "download its index" in f.text
    # Already short of what is known: a failure, whatever the unknown adds.
    [f] = disk.judge_disk("spark-1", free, {"the Hugging Face cache": None, "docker's data": 20 * disk.GIB}, 0)
    assert f.code == Code.DISK_FULL


def test_disk_space_on_the_h200_is_not_checked_for_want_of_the_models_size():
    [(verdict, message)] = messages("test_disk_space", H200)
    assert verdict == "not checked" and "[prerequisite-failed]" in message and "test_container_runtime" in message


def test_advisories_with_the_bios_unknown_are_not_checked():
    [(verdict, message)] = messages("test_advisories", H200)
    assert verdict == "not checked"
    assert "/sys/class/dmi/id/bios_" in message and "No such file or directory" in message


def test_addressing_fails_on_an_interface_the_node_does_not_have():
    ifaces = sim_interfaces()
    ghost = Link(netdev="enp9s0f0np0", rdma_device="rocep9s0f0", address="10.99.0.1/24")
    [f] = links.judge_distinct_subnets("spark-1", [ghost], ifaces)
    assert f.code == Code.LINK_MISSING and "no interface enp9s0f0np0" in f.seen
    [f] = links.judge_default_route("spark-1", [], [ghost], ifaces)
    assert f.code == Code.LINK_MISSING
    # The address check too: the interface is missing, not its address (never "saw IPv4 none; give it the address").
    [f] = links.judge_address("spark-1", ghost, ifaces)
    names = ", ".join(sorted(i.name for i in ifaces))
    assert (f.code, f.where) == (Code.LINK_MISSING, "spark-1:enp9s0f0np0")
    assert f.seen == f"no interface enp9s0f0np0 (the node has {names})" and "IPv4" not in f.text
    assert "give enp9s0f0np0" not in f.text and "ibdev2netdev should list rocep9s0f0 ==> enp9s0f0np0" in f.text
    assert links.judge_address("spark-1", LINK, ifaces) == []
    assert links.judge_distinct_subnets("spark-1", [LINK, OTHER], ifaces) == []
    assert links.judge_default_route("spark-1", [], [LINK, OTHER], ifaces) == []


def test_rdma_counters_without_an_rdma_device_are_not_checked_not_a_crash():
    counters = {("rocep1s0f0", "1", "link_downed"): 0}
    found = platform.judge_rdma_counters("spark-1", counters, [None, "rocep1s0f0"])
    assert [f.code for f in found] == [Code.UNKNOWN_NEED] and found[0].not_checked
    assert "names no rdma_device" in found[0].seen and "add rdma_device to every link" in found[0].text
    [f] = platform.judge_rdma_counters("spark-1", counters, ["roceP2p1s0f0"])  # a device without counters
    assert f.code == Code.NO_RDMA and f.not_checked


def test_root_without_sudo_names_the_missing_tools_and_reads_the_kernel_log():
    """The H200 machine: root, no sudo, no ufw or lspci installed; dmesg works as root."""
    [(verdict, message)] = messages("test_firewall", H200)
    assert verdict == "not checked" and "[tool-missing] h200: could not check: `ufw` is not installed" in message
    assert "install ufw on h200" in message and "sudo" not in message
    [(verdict, message)] = messages("test_pcie_link", H200)
    assert verdict == "not checked" and "`lspci` is not installed" in message and "install pciutils on h200" in message
    assert messages("test_kernel_log", H200) == [("passed", "")]


def test_a_missing_sudo_is_not_read_as_a_missing_tool():
    lspci = registry.FACTS["lspci"]
    got = registry.cause(lspci, Output("lspci -D -nn -vv -d 15b3:", 127, "", "sh: 1: sudo: not found\n"), "spark-1")
    assert got.code == Code.SUDO_MISSING
    got = registry.cause(lspci, Output("lspci -D -nn -vv -d 15b3:", 127, "", "sh: 1: lspci: not found\n"), "spark-1")
    assert (got.code, got.params["tool"], got.params["package"]) == (Code.TOOL_MISSING, "lspci", "pciutils")
    got = registry.cause(lspci, Output("lspci", 1, "", "sudo: a password is required\n"), "spark-1")
    assert got.code == Code.SUDO_REFUSED


def test_every_cause_of_not_checked_has_a_code_that_is_never_a_failure():
    for code in (Code.TOOL_MISSING, Code.SUDO_REFUSED, Code.SUDO_MISSING, Code.NO_RDMA, Code.PREREQUISITE, Code.UNKNOWN_NEED):
        assert code in NOT_CHECKED


def test_driver_packages_found_beside_a_pattern_that_matched_nothing_are_read():
    """dpkg-query exits 1 when one pattern matches nothing, with the other's rows on stdout (the driver-unheld scenario)."""
    from gb10check.gather import readers

    out = Output("dpkg-query -W ...", 1, "nvidia-driver-580-open install ok installed\n",
                 "dpkg-query: no packages found matching libnvidia-compute-*\n")
    assert [p.package for p in readers.driver_packages(out)] == ["nvidia-driver-580-open"]
    assert readers.driver_packages(Output("dpkg-query -W ...", 1, "", "dpkg-query: no packages found matching a\n")) == []
