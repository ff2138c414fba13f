"""Hardware profiles (gb10check/profiles/, gb10check/cluster.py) and `gb10check profile snapshot` (gb10check/profile.py):
every shipped profile names every hardware field with its source; the cluster file's profile and overrides resolve into
the Expect the checks read; the GB10 floors tell a healthy GB10 from one stuck in low power through the real judge; the
snapshot's pure part reads real captures (public ones read in place, ours in selftests/captures)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gb10check import profile
from gb10check.checks import gpu
from gb10check.cluster import (ClusterError, Expect, known_profiles, load_cluster, load_profile, parse_cluster,
                               profile_fields)
from gb10check.facts import parse
from gb10check.remedies import Code
from gb10check.sim import topology

from .conftest import read_capture

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = yaml.safe_load((REPO / "cluster.example.yaml").read_text())
H200_RUN = json.loads(read_capture("ours/raw/gpu_canary/h200-1gpu-matmul.json"))
H200_SAMPLES = parse("nvidia_smi_query", read_capture("ours/gpu_canary/h200-1gpu-smi-samples-matmul.txt"))


def cluster_text(**expect) -> str:
    data = json.loads(json.dumps(EXAMPLE))
    data["expect"] = {**data["expect"], **expect}
    return yaml.safe_dump(data)


def codes(findings):
    return [(f.code, f.where, f.warning) for f in findings]


# ---- the shipped profiles ------------------------------------------------------------------------------------------

def test_every_shipped_profile_loads_with_a_source_for_every_field():
    assert known_profiles() == ["gb10", "h200", "sim"]
    fields = profile_fields()
    assert {"memory_gib", "gpu_name", "link_speed_mbps", "min_ib_write_bw_gbps", "min_nccl_busbw_gbps", "min_tflops",
            "min_sm_clock_mhz", "max_compute_spread", "pcie_speed_gts", "pcie_width", "roce_gid_type",
            "roce_gid_index"} <= set(fields)
    for name in known_profiles():
        p = load_profile(name)
        assert list(p.values) == fields and list(p.sources) == fields, name
        assert all(len(s) > 20 for s in p.sources.values()), name  # a source says where, not "n/a"
        assert Expect(profile=name).model_dump(include=set(fields)) == p.values


def test_the_default_is_the_gb10_profile_not_the_simulation():
    gb10, sim = Expect(), Expect(profile="sim")
    assert gb10.profile == "gb10" and gb10 == Expect(profile="gb10")
    assert (gb10.memory_gib, gb10.gpu_name, gb10.link_speed_mbps, gb10.min_ib_write_bw_gbps, gb10.min_nccl_busbw_gbps) == \
        (119.0, "NVIDIA GB10", 200000, 90.0, 160.0)
    assert (gb10.min_tflops, gb10.max_compute_spread, gb10.compute_seconds) == (60.0, 0.15, 10.0)
    # the simulation's compute canary is a stand-in answering as a GB10: the GB10's floors, its own short durations
    assert (sim.min_tflops, sim.max_compute_spread, sim.compute_seconds, sim.ib_write_bw_duration_s) == (60.0, 0.15, 2.0, 1)
    assert "stand-in" in load_profile("sim").sources["min_tflops"]
    assert load_cluster(REPO / "cluster.example.yaml").expect == gb10


def test_the_simulated_cluster_names_the_sim_profile():
    text = topology.cluster_yaml(topology.pair_or_switch(2), "/tmp/gb10sim-state")
    assert yaml.safe_load(text)["expect"]["profile"] == "sim"
    assert parse_cluster(text).expect == Expect(profile="sim")


def test_the_h200_profile_passes_our_h200_and_the_device_cluster_names_it():
    h200 = Expect(profile="h200")
    assert (h200.gpu_name, h200.driver_version, h200.min_tflops, h200.pcie_speed_gts) == ("NVIDIA H200", "580.159.04", 500.0, None)
    assert gpu.judge_compute("h200", H200_RUN, H200_SAMPLES, None, h200, ("h200", H200_RUN["tflops"])) == []
    assert load_cluster(REPO / "selftests" / "device" / "h200-local-cluster.yaml").expect == h200


# ---- the GB10 floors through the real judge ------------------------------------------------------------------------

def gb10_run(tflops: float) -> dict:
    """gb10check/canary/matmul.py's line for a GB10 at the field's figure (no GB10 run of ours exists yet)."""
    return {"tflops": tflops, "tflops_median": tflops, "iterations": int(tflops * 10 / 1.1), "seconds": 10.0,
            "device": "NVIDIA GB10", "backend": "cuda", "dtype": "bfloat16", "n": 8192, "torch": "2.11.0+cu130"}


NO_SAMPLES = "not sampled in this test"


def test_the_gb10_floor_fails_a_gb10_stuck_in_low_power_and_passes_a_healthy_one():
    # Field figures (issue #27): healthy about 90 TFLOP/s, stuck in low power about 36.
    healthy = gpu.judge_compute("gb10-a", gb10_run(90.0), None, NO_SAMPLES, Expect(), None)
    assert codes(healthy) == [(Code.GPU_NOT_SAMPLED, "gb10-a", True)]  # no samples given: only that warning
    stuck = gpu.judge_compute("gb10-b", gb10_run(36.0), None, NO_SAMPLES, Expect(), ("gb10-a", 90.0))
    assert codes(stuck) == [(Code.GPU_COMPUTE_LOW, "gb10-b", False), (Code.GPU_NOT_SAMPLED, "gb10-b", True),
                            (Code.GPU_COMPUTE_SPREAD, "gb10-b", False)]
    assert stuck[0].text.startswith("[gpu-compute-low] gb10-b: saw 36 TFLOP/s (bfloat16 8192^3 matmul on NVIDIA GB10, cuda); "
                                    "expected >= 60 TFLOP/s (expect.min_tflops)\n  fix: power gb10-b off at the wall")
    # alone (no faster node to compare with), the floor is what catches it; the old 0.01 default never could
    assert codes(gpu.judge_compute("gb10-b", gb10_run(36.0), None, NO_SAMPLES, Expect(), None))[0] == \
        (Code.GPU_COMPUTE_LOW, "gb10-b", False)
    assert gpu.judge_compute("gb10-b", gb10_run(36.0), None, NO_SAMPLES, Expect(min_tflops=0.01), None)[0].code \
        is Code.GPU_NOT_SAMPLED


# ---- the cluster file: profile and overrides -----------------------------------------------------------------------

def test_the_cluster_file_names_a_profile_and_overrides_fields():
    c = parse_cluster(cluster_text(profile="sim", min_tflops=0.02, roce_gid_index=5))
    assert c.expect.profile == "sim"
    assert (c.expect.min_tflops, c.expect.roce_gid_index) == (0.02, 5)  # the overrides
    assert (c.expect.compute_seconds, c.expect.ib_write_bw_duration_s) == (2.0, 1)  # the rest: the sim profile's
    assert c.expect.firewall == Expect().firewall  # site settings are not the profile's
    assert parse_cluster(cluster_text(min_tflops=75)).expect == Expect(min_tflops=75)


def test_an_unknown_profile_name_is_one_line_naming_the_known_ones():
    with pytest.raises(ClusterError) as err:
        parse_cluster(cluster_text(profile="gb11"))
    assert str(err.value) == ("cluster.yaml: expect: profile 'gb11' is not a known profile: the known ones are gb10, h200, sim "
                              "(gb10check/profiles/), or give a path to a profile file (`gb10check profile snapshot` writes one)")


def test_an_override_is_validated_like_the_profile():
    with pytest.raises(ClusterError, match=r"^cluster\.yaml: expect\.min_tflops: Input should be greater than or equal to 0$"):
        parse_cluster(cluster_text(min_tflops=-1))


def write_profile(folder: Path, name: str, change=None) -> Path:
    data = yaml.safe_load((REPO / "gb10check" / "profiles" / "h200.yaml").read_text())
    if change:
        change(data)
    path = folder / name
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_profile_path_is_read_beside_the_cluster_file(tmp_path):
    write_profile(tmp_path, "mine.yaml", lambda d: d["expect"]["min_tflops"].update(value=600))
    (tmp_path / "cluster.yaml").write_text(cluster_text(profile="./mine.yaml", compute_seconds=20))
    c = load_cluster(tmp_path / "cluster.yaml")
    assert (c.expect.profile, c.expect.gpu_name, c.expect.min_tflops, c.expect.compute_seconds) == \
        ("./mine.yaml", "NVIDIA H200", 600.0, 20.0)


@pytest.mark.parametrize("change, message", [
    (lambda d: d["expect"].pop("min_tflops"), r"no min_tflops: a profile names every field of the hardware, with its source"),
    (lambda d: d["expect"]["gpu_name"].pop("source"), r"gpu_name: expected \{value: \.\.\., source: \"where the figure comes from\"\}"),
    (lambda d: d["expect"]["gpu_name"].update(source=" "), r"gpu_name: expected \{value: \.\.\., source:"),
    (lambda d: d["expect"].update(firewall={"value": {}, "source": "site"}), r"firewall is not a profile field; the fields are memory_gib, "),
    (lambda d: d["expect"]["memory_gib"].update(value="lots"), r"memory_gib: expected a size such as '105G' or '119 GiB', got 'lots'"),
    (lambda d: d.pop("about"), r"expected a mapping with `about` \(one line\) and `expect`"),
])
def test_a_bad_profile_file_is_one_line_naming_the_file_and_field(tmp_path, change, message):
    path = write_profile(tmp_path, "bad.yaml", change)
    (tmp_path / "cluster.yaml").write_text(cluster_text(profile="bad.yaml"))
    with pytest.raises(ClusterError, match=rf"^{tmp_path}/cluster\.yaml: expect: profile bad\.yaml \({path}\): {message}"):
        load_cluster(tmp_path / "cluster.yaml")


def test_a_missing_profile_file_says_so(tmp_path):
    (tmp_path / "cluster.yaml").write_text(cluster_text(profile="./nowhere.yaml"))
    with pytest.raises(ClusterError, match=r"expect: profile \./nowhere\.yaml \(.*/nowhere\.yaml\): cannot read the profile "
                                           r"file: No such file or directory$"):
        load_cluster(tmp_path / "cluster.yaml")


# ---- snapshot: the pure part on captures ---------------------------------------------------------------------------

SPARK_LINKS = ("enp1s0f1np1", "enP2p1s0f1np1")  # the DGX Spark's ports in the ethtool capture


def spark_cluster():
    data = json.loads(json.dumps(EXAMPLE))
    for node in data["nodes"]:
        for link, netdev in zip(node["links"], SPARK_LINKS):
            link["netdev"] = netdev
    return parse_cluster(yaml.safe_dump(data))


def spark_facts(smi: str = "nvidia_smi/gb10-query-gpu-name-driver-noheader-idx69674905226.txt") -> profile.NodeFacts:
    """A DGX Spark's outputs, as published (captures/SOURCES.md): nvidia-smi name and driver, /proc/meminfo, ethtool."""
    ethtool = read_capture("ip_ethtool/dgxspark-playbook-switch-ethtool-speed-grep-200G.txt")
    return profile.NodeFacts(read_capture(smi),
                             read_capture("meminfo/dgxspark-proc-meminfo-partial-author-selected-idx68529745704.txt"),
                             {netdev: ethtool for netdev in SPARK_LINKS})


def spark_measurements() -> list[dict]:
    """findings.json's measurements as a run records them, with the published GB10 figures parsed by our parsers."""
    bw = [parse("perftest", read_capture(f"perftest/dgxspark-playbook-ib_write_bw-{dev}-infinite.txt")).bw_average_gbps
          for dev in ("rocep1s0f0", "roceP2p1s0f0")]
    nccl = parse("nccl_tests", read_capture("nccl_tests/dell-promax-gb10-2node-all_gather_perf-16G.txt")).busbw_gbps
    assert (bw, nccl) == ([92.568, 97.282], 183.68)
    return [{"what": "ib_write_bw", "where": "a:enp1s0f1np1--b:enp1s0f1np1", "value": bw[0], "unit": "Gb/s"},
            {"what": "ib_write_bw", "where": "a:enP2p1s0f1np1--b:enP2p1s0f1np1", "value": bw[1], "unit": "Gb/s"},
            {"what": "nccl all_gather busbw", "where": "a: all_gather_perf x2", "value": nccl, "unit": "Gb/s"},
            {"what": "memory need per rank", "where": "a", "value": 40.1, "unit": "GiB"}]


def test_snapshot_of_a_gb10_pair_from_its_facts_and_a_run(tmp_path):
    cluster = spark_cluster()
    got = {n.name: spark_facts() for n in cluster.nodes}
    doc = profile.snapshot(cluster, load_profile("gb10"), got, spark_measurements(), "2026-12-02 17:00 UTC")
    e = {k: v["value"] for k, v in doc["expect"].items()}
    # read from the nodes: nvidia-smi says [N/A] for a GB10's memory, so MemTotal (121.69 GiB) is the unified memory
    assert (e["gpu_name"], e["driver_version"], e["memory_gib"], e["link_speed_mbps"]) == ("NVIDIA GB10", "580.173.02", 121.0, 200000)
    # measured: the slowest figure less 15%: 92.568 -> 78.6 Gb/s, 183.68 -> 156 Gb/s
    assert (e["min_ib_write_bw_gbps"], e["min_nccl_busbw_gbps"]) == (78.6, 156.0)
    src = doc["expect"]
    assert src["min_ib_write_bw_gbps"]["source"] == (
        "measured on pgx-pair at 2026-12-02 17:00 UTC: ib_write_bw 92.568 Gb/s at a:enp1s0f1np1--b:enp1s0f1np1, the slowest of "
        "2, less 15%")
    assert src["memory_gib"]["source"].endswith("/proc/meminfo MemTotal (unified memory): 121.69 GiB on thinkstationpgx-30, "
                                                "the smallest of thinkstationpgx-30, thinkstationpgx-32")
    # not measured in that run (no matmul figure): kept from the gb10 profile, its source quoted
    assert e["min_tflops"] == 60.0
    assert src["min_tflops"]["source"].startswith("profile gb10, not measured: field figures (issue #27)")
    # the written file is a profile: a cluster file naming it resolves to these figures
    text = profile.render(doc, "gb10check profile snapshot --cluster=c.yaml --from-report=r")
    assert text.startswith("# Hardware profile written by `gb10check profile snapshot --cluster=c.yaml --from-report=r`.\n"
                           "# pgx-pair: 2 x NVIDIA GB10, measured on pgx-pair at 2026-12-02 17:00 UTC (from profile gb10).\n"
                           "# Measured: memory_gib, gpu_name, driver_version, link_speed_mbps, min_ib_write_bw_gbps, "
                           "min_nccl_busbw_gbps.\n# Kept from the profile before (not measured): roce_gid_type, roce_gid_index, "
                           "min_nccl_ring_busbw_gbps,\n# min_nccl_link_busbw_gbps, min_collective_busbw_gbps, "
                           "max_collective_8k_latency_us, min_tflops,")
    (tmp_path / "pair.yaml").write_text(text)
    (tmp_path / "cluster.yaml").write_text(cluster_text(profile="pair.yaml"))
    assert load_cluster(tmp_path / "cluster.yaml").expect.model_dump(include=set(e)) == e


def test_snapshot_keeps_the_cluster_files_overrides_and_says_so():
    cluster = parse_cluster(yaml.safe_dump({**json.loads(json.dumps(EXAMPLE)), "nodes": spark_cluster().model_dump(
        mode="json")["nodes"]}).replace("profile: gb10", "profile: gb10\n  roce_gid_index: 5"))
    doc = profile.snapshot(cluster, load_profile("gb10"), {n.name: spark_facts() for n in cluster.nodes}, None, "now")
    assert doc["expect"]["roce_gid_index"] == {"value": 5, "source": "pgx-pair's cluster file (expect.roce_gid_index), not measured"}
    assert doc["expect"]["min_ib_write_bw_gbps"]["value"] == 90.0  # no report: the profile's floor stays


def test_snapshot_of_our_h200_reads_the_gpus_own_memory():
    cluster = parse_cluster((REPO / "selftests" / "device" / "h200-local-cluster.yaml").read_text())
    got = {"h200": profile.NodeFacts(read_capture("ours/nvidia_smi/h200-query-gpu-csv.txt"),
                                     read_capture("ours/meminfo/h200-proc-meminfo.txt"),
                                     {"eth0": read_capture("ours/ip_ethtool/sim-ethtool-mgmt-veth-enP7s7-rank0.txt")})}
    run = [{"what": "matmul (median batch)", "where": "h200", "value": gpu.compute_rate(H200_RUN),
            "unit": "TFLOP/s (bfloat16 on NVIDIA H200)"}]
    doc = profile.snapshot(cluster, load_profile("h200"), got, run, "2026-11-30 21:26 UTC")
    e = {k: v["value"] for k, v in doc["expect"].items()}
    # nvidia-smi memory.total 143771 MiB (both GPUs), not the host's 251.8 GiB MemTotal
    assert (e["gpu_name"], e["driver_version"], e["memory_gib"]) == ("NVIDIA H200", "580.159.04", 140.0)
    assert e["min_tflops"] == 564.0  # 664.2117 less 15%
    assert e["link_speed_mbps"] == 10000  # what that ethtool output says (a veth's)
    mine = Expect(**{**e, "profile": "h200"})
    assert gpu.judge_compute("h200", H200_RUN, H200_SAMPLES, None, mine, None) == []
    slower = dict(H200_RUN, tflops_median=H200_RUN["tflops_median"] * 0.8)  # 20% under its own reference
    assert codes(gpu.judge_compute("h200", slower, H200_SAMPLES, None, mine, None)) == [(Code.GPU_COMPUTE_LOW, "h200", False)]


def test_snapshot_refuses_nodes_that_differ():
    cluster = spark_cluster()
    got = {"thinkstationpgx-30": spark_facts(), "thinkstationpgx-32": spark_facts("ours/nvidia_smi/h200-query-gpu-csv.txt")}
    with pytest.raises(profile.SnapshotError, match=r"^GPU name differs \(thinkstationpgx-30: NVIDIA GB10, thinkstationpgx-32: "
                                                    r"NVIDIA H200\): a snapshot takes a healthy cluster whose nodes are alike$"):
        profile.snapshot(cluster, load_profile("gb10"), got, None, "now")


def test_snapshot_refuses_a_link_without_a_speed():
    cluster = spark_cluster()
    no_link = read_capture("ip_ethtool/ethtool-non-root-minimal-driver-no-speed-only-Link-detected-wol-permission-2-ports-"
                           "open-nic-driver-issue29.txt")
    got = {n.name: spark_facts() for n in cluster.nodes}
    got["thinkstationpgx-32"].ethtool["enP2p1s0f1np1"] = no_link
    with pytest.raises(profile.SnapshotError, match=r"^no link speed \(ethtool Speed\) on thinkstationpgx-32:enP2p1s0f1np1$"):
        profile.snapshot(cluster, load_profile("gb10"), got, None, "now")


def test_snapshot_refuses_a_run_that_failed_or_did_not_look():
    report = {"measurements": spark_measurements(),
              "findings": [{"code": "ib-write-bw-low", "severity": "failure", "where": "a:x--b:x"},
                           {"code": "firewall-port", "severity": "warning", "where": "a"}]}
    with pytest.raises(profile.SnapshotError, match=r"^the run has 1 failure\(s\) or check\(s\) not made \(ib-write-bw-low at "
                                                    r"a:x--b:x\): a snapshot takes a healthy cluster's figures"):
        profile.report_measurements(report)
    report["findings"] = report["findings"][1:]  # a warning alone does not refuse it
    assert profile.report_measurements(report) == report["measurements"]
    with pytest.raises(profile.SnapshotError, match=r"^findings\.json has no `measurements` list$"):
        profile.report_measurements({"findings": []})


def test_a_measurement_in_another_unit_is_refused():
    with pytest.raises(profile.SnapshotError, match=r"^measurement ib_write_bw at l: expected a number in Gb/s, got 11\.0 'MB/s'$"):
        profile.measured_figures([{"what": "ib_write_bw", "where": "l", "value": 11.0, "unit": "MB/s"}])


# ---- snapshot: the command, through the library, on a local node ---------------------------------------------------

def test_the_snapshot_command_reads_a_local_node_and_writes_a_loadable_profile(tmp_path):
    """One `connection: local` node whose nvidia-smi and ethtool print our H200's outputs (this machine has neither);
    /proc/meminfo is this machine's own. The command reads them through gather.Fleet and writes the file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool, capture in (("nvidia-smi", "nvidia_smi/h200-query-gpu-csv.txt"), ("ethtool", "ip_ethtool/sim-ethtool-mgmt-veth-enP7s7-rank0.txt")):
        (bin_dir / tool).write_text(f"#!/bin/sh\ncat '{REPO / 'selftests' / 'captures' / capture}'\n")
        (bin_dir / tool).chmod(0o755)
    (tmp_path / "cluster.yaml").write_text((REPO / "selftests" / "device" / "h200-local-cluster.yaml").read_text())
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "findings.json").write_text(json.dumps({"measurements": [
        {"what": "matmul (median batch)", "where": "h200", "value": 664.2117, "unit": "TFLOP/s (bfloat16 on NVIDIA H200)"}]}))
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run([sys.executable, "-m", "gb10check", "profile", "snapshot", f"--cluster={tmp_path / 'cluster.yaml'}",
                          "--from-report", str(tmp_path / "run"), "-o", str(tmp_path / "mine.yaml")],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    mine = load_profile(str(tmp_path / "mine.yaml"))
    assert (mine.values["gpu_name"], mine.values["memory_gib"], mine.values["min_tflops"]) == ("NVIDIA H200", 140.0, 564.0)
    assert mine.sources["min_tflops"].startswith("measured on h200-device at ")
    assert mine.sources["min_ib_write_bw_gbps"].startswith("profile h200, not measured: does not apply")
    # a node that cannot answer stops it, naming the node and the command
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the "
                                        "NVIDIA driver.' ; exit 9\n")
    run = subprocess.run([sys.executable, "-m", "gb10check", "profile", "snapshot", f"--cluster={tmp_path / 'cluster.yaml'}"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.startswith("gb10check profile snapshot: h200: `nvidia-smi --query-gpu=name,driver_version,memory.total "
                                 "--format=csv` exited 9: NVIDIA-SMI has failed because it could not communicate")
