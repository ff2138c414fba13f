"""Judges of the GPU and image canaries (gb10check/checks/gpu.py) on our real outputs: the packaged canary programs
(gb10check/canary/) run on a one-H200 machine, twice, and the nvidia-smi samples taken under them; the samples of the
two-H200 machine; and the timing program's real CPU runs here (selftests/captures/, see its README)."""

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gb10check.checks import gpu, host
from gb10check.cluster import Expect, NcclPin, load_cluster
from gb10check.facts import parse
from gb10check.remedies import Code

from .conftest import read_capture

REPO = Path(__file__).resolve().parent.parent
# The one-H200 machine's runs (selftests/device/run_canaries_h200.sh): gb10check/canary/matmul.py's and nccl.py's own
# lines, and the suite's sampler (nvidia-smi -i 0 every 500 ms) under the matmul; run 2 about 3.5 hours after run 1.
H200 = json.loads(read_capture("ours/raw/gpu_canary/h200-1gpu-matmul.json"))
SAMPLES = parse("nvidia_smi_query", read_capture("ours/gpu_canary/h200-1gpu-smi-samples-matmul.txt"))
H200_NCCL = json.loads(read_capture("ours/raw/gpu_canary/h200-1gpu-nccl.json"))
R2 = json.loads(read_capture("ours/raw/gpu_canary/h200-1gpu-r2-matmul.json"))
R2_SAMPLES = parse("nvidia_smi_query", read_capture("ours/gpu_canary/h200-1gpu-r2-smi-samples-matmul.txt"))
R2_NCCL = json.loads(read_capture("ours/raw/gpu_canary/h200-1gpu-r2-nccl.json"))
# The two-H200 machine's samples (nvidia-smi --query-gpu ... -lms 500): rows alternate GPU 0 / GPU 1, the matmul ran on 0.
X2_GPU0 = parse("nvidia_smi_query", read_capture("ours/gpu_canary/h200-smi-samples-500ms.txt"))[0::2]
H200_PROFILE = Expect(profile="h200")  # gb10check/profiles/h200.yaml: >= 500 TFLOP/s, SM clock >= 1200 MHz
# A floor under a CPU matmul's figures, with the GB10's 15% spread: the spread judge on the real CPU runs below.
CPU_FLOOR = Expect(min_tflops=0.01)
CPU_SPREAD_15 = Expect(min_tflops=0.01, max_compute_spread=0.15)
DEVICE_CLUSTER = REPO / "selftests" / "device" / "h200-local-cluster.yaml"
# gb10check/canary/matmul.py's own lines from two runs on this 2-core machine with the simulation's CPU torch 2.13
# (float32 1024^3; the machine was shared, hence the spread between the runs).
CPU_A = {"tflops": 0.0648, "tflops_median": 0.0669, "iterations": 151, "seconds": 5.011, "device": "cpu", "backend": "cpu",
         "dtype": "float32", "n": 1024, "torch": "2.13.0+cpu"}
CPU_B = {"tflops": 0.0411, "tflops_median": 0.0587, "iterations": 62, "seconds": 3.238, "device": "cpu", "backend": "cpu",
         "dtype": "float32", "n": 1024, "torch": "2.13.0+cpu"}
# The same program on this machine, one run in a cgroup held to half a CPU (cpu.cfs_quota_us 50000 of 100000), the next
# without (the machine shared with a self-test run): a node whose matmul really runs slower.
CPU_HALF = {"tflops": 0.0212, "tflops_median": 0.024, "iterations": 50, "seconds": 5.076, "device": "cpu", "backend": "cpu",
            "dtype": "float32", "n": 1024, "torch": "2.13.0+cpu"}
CPU_FULL = {"tflops": 0.0519, "tflops_median": 0.0619, "iterations": 124, "seconds": 5.136, "device": "cpu", "backend": "cpu",
            "dtype": "float32", "n": 1024, "torch": "2.13.0+cpu"}
# The library torch loads there, with the machine's stale NCCL_VERSION variable set aside (its own test below).
NCCL = dict(H200_NCCL, env_nccl_version=None)
LIBNCCL = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"


def codes(findings):
    return [(f.code, f.where, f.warning) for f in findings]


def test_the_h200_under_load_passes_its_profile():
    assert (H200["tflops"], H200["iterations"], H200["backend"], H200["device"]) == (665.9505, 6020, "cuda", "NVIDIA H200")
    load = gpu.load_of(SAMPLES)
    assert (load.samples, load.sm_clock_mhz, load.max_sm_clock_mhz, load.reason_text) == (22, 1477.5, 1980.0, "sw_power_cap")
    assert (load.power_w, load.temperature_c) == (691.84, 59.0)
    assert gpu.judge_compute("h200", H200, SAMPLES, None, H200_PROFILE, ("h200", H200["tflops"])) == []
    assert gpu.measured(H200, load) == [("matmul (median batch)", 664.2117, "TFLOP/s (bfloat16 on NVIDIA H200)"),
                                        ("SM clock under load (median)", 1477.5, "MHz of 1980.0"),
                                        ("GPU power under load (median)", 691.84, "W"),
                                        ("clock-event reasons under load", "sw_power_cap", "(mask 0x4)")]


def test_sampling_both_gpus_of_the_x2_machine_judges_the_busy_one():
    # nvidia-smi without -i on the two-H200 machine: GPU 1 stayed idle (reason 0x1 in every sample), so it drops out
    load = gpu.load_of(X2_GPU0)
    assert (load.samples, load.sm_clock_mhz, load.power_w, load.temperature_c, load.reason_text) == \
        (24, 1485.0, 691.125, 56.0, "sw_power_cap")
    both = parse("nvidia_smi_query", read_capture("ours/gpu_canary/h200-smi-samples-500ms.txt"))
    assert gpu.load_of(both[1::2]) is None
    assert gpu.load_of(both) == load


def test_the_default_gb10_floors_fail_a_cpu_node_and_a_cpu_floor_passes_it():
    # No default is set for the simulation's sake: the default is the gb10 profile, whose floor a CPU matmul fails (the
    # simulated nodes' canary is a stand-in answering as a GB10); a floor under it passes. The H200 clears the GB10's too.
    no_clock = "Field \"clocks.sm\" is not a valid field to query."
    assert Expect() == Expect(profile="gb10") and Expect().min_tflops == 60
    [f] = gpu.judge_compute("sim-0", CPU_A, None, no_clock, Expect(), ("sim-0", CPU_A["tflops"]))
    assert codes([f]) == [(Code.GPU_COMPUTE_LOW, "sim-0", False)]
    assert "expected >= 60 TFLOP/s (expect.min_tflops)" in f.text
    assert gpu.judge_compute("sim-0", CPU_A, None, no_clock, CPU_FLOOR, ("sim-0", CPU_A["tflops"])) == []
    assert Expect(profile="sim").min_tflops == 60
    assert gpu.judge_compute("h200", H200, SAMPLES, None, Expect(), None) == []


def test_below_the_tflops_floor_names_the_ac_power_off():
    [f] = gpu.judge_compute("h200", H200, SAMPLES, None, H200_PROFILE.model_copy(update={"min_tflops": 800}), None)
    assert codes([f]) == [(Code.GPU_COMPUTE_LOW, "h200", False)]
    assert f.text.startswith("[gpu-compute-low] h200: saw 664.2 TFLOP/s (bfloat16 8192^3 matmul on NVIDIA H200, cuda); "
                             "expected >= 800 TFLOP/s (expect.min_tflops)\n  fix: power h200 off at the wall (AC off")
    assert "a reboot does not clear it" in f.text


def test_a_clock_under_the_floor_names_the_reasons():
    # The real H200 at its 700 W cap ran at 1395-1545 MHz: under a 1700 MHz floor that is what a stuck clock looks like.
    [f] = gpu.judge_compute("h200", H200, SAMPLES, None, H200_PROFILE.model_copy(update={"min_sm_clock_mhz": 1700}), None)
    assert codes([f]) == [(Code.GPU_CLOCK_LOW, "h200", False)]
    assert f.text.startswith("[gpu-clock-low] h200: saw SM clock 1477.5 MHz under load (median of 22 samples, max 1980.0 MHz), "
                             "691.84 W, ")
    assert "reasons sw_power_cap; expected >= 1700 MHz (expect.min_sm_clock_mhz)" in f.text
    assert f.text.endswith("active clock-event reasons under load: sw_power_cap")


def test_a_node_slower_than_the_fastest_fails_the_spread():
    [f] = gpu.judge_compute("sim-1", CPU_HALF, None, None, CPU_SPREAD_15, ("sim-0", gpu.compute_rate(CPU_FULL)))
    assert codes([f]) == [(Code.GPU_COMPUTE_SPREAD, "sim-1", False)]
    assert f.text.startswith("[gpu-compute-spread] sim-1: saw 0.024 TFLOP/s, 61% slower than sim-0 (0.0619 TFLOP/s); "
                             "expected within 15% of the fastest node (expect.max_compute_spread)\n  fix: power sim-1 off at the wall")
    assert "compare its SM clock and power with sim-0's" in f.text
    assert gpu.judge_compute("sim-1", CPU_HALF, None, None, Expect(min_tflops=0.01, max_compute_spread=0.65), ("sim-0", 0.0619)) == []


def test_a_burst_of_other_work_moves_the_mean_not_the_median():
    # CPU_B's run shared the machine: its overall figure is 37% under CPU_A's, its median batch 12% (within 15%).
    assert gpu.compute_rate(CPU_B) == 0.0587 and 1 - CPU_B["tflops"] / CPU_A["tflops"] > 0.3
    assert gpu.judge_compute("sim-1", CPU_B, None, None, CPU_SPREAD_15, ("sim-0", gpu.compute_rate(CPU_A))) == []


@pytest.mark.parametrize("rows, why", [(None, 'Field "clocks.sm" is not a valid field to query.'),
                                       ([r for r in SAMPLES if r["clocks_event_reasons_active"].endswith("1")], None)])
def test_a_cuda_run_without_samples_under_load_is_a_warning(rows, why):
    [f] = gpu.judge_compute("h200", H200, rows, why, H200_PROFILE, None)
    assert codes([f]) == [(Code.GPU_NOT_SAMPLED, "h200", True)]
    assert f"saw no nvidia-smi sample under load ({why or 'only idle samples'})" in f.text


def test_nccl_identity_equal_to_rank_0_and_the_pin_passes():
    pin = NcclPin(version="2.28.9", build_id="9fcf74d93a8c3605bf7718f594d0a24366e38536")
    assert gpu.judge_nccl_identity("b", "a", NCCL, dict(NCCL), pin, "img") == []
    assert gpu.judge_nccl_identity("a", "a", dict(NCCL, env_nccl_version="2.28.9-1"), NCCL, None, "img") == []


def test_another_build_of_the_same_version_differs_from_rank_0():
    other = dict(NCCL, path="/usr/lib/aarch64-linux-gnu/libnccl.so.2.28.9", build_id="0123456789abcdef0123456789abcdef01234567")
    [f] = gpu.judge_nccl_identity("b", "a", other, NCCL, None, "vllm/vllm-openai:x")
    assert codes([f]) == [(Code.IMAGE_NCCL_DIFFERS, "b", False)]
    assert f.text.startswith("[image-nccl-differs] b: saw NCCL 2.28.9 /usr/lib/aarch64-linux-gnu/libnccl.so.2.28.9 build id "
                             "0123456789abcdef0123456789abcdef01234567 (path, build_id differ); expected NCCL 2.28.9 "
                             "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2 build id "
                             "9fcf74d93a8c3605bf7718f594d0a24366e38536 as on a\n  fix: ship rank 0's image to b "
                             "(docker save vllm/vllm-openai:x | ssh b docker load)")


def test_a_pin_the_library_does_not_match_fails():
    [f] = gpu.judge_nccl_identity("a", "a", NCCL, NCCL, NcclPin(version="2.27.7"), "img")
    assert codes([f]) == [(Code.IMAGE_NCCL_PIN, "a", False)]
    assert "expected version 2.27.7 (deploy.nccl)\n  fix: use an image whose torch loads the pinned NCCL" in f.text


def test_a_stale_nccl_version_variable_is_a_warning():
    [f] = gpu.judge_nccl_identity("a", "a", dict(NCCL, env_nccl_version="2.27.3"), NCCL, None, "img")
    assert codes([f]) == [(Code.IMAGE_NCCL_ENV_STALE, "a", True)]
    assert f.text.startswith("[image-nccl-env-stale] a: saw NCCL_VERSION=2.27.3 in the image img, but torch loads NCCL 2.28.9 ")
    assert f.text.endswith("fix: trust the library, not the variable: NCCL_VERSION in the image img is stale (rebuild the "
                           "image with the variable set to the NCCL it ships, or drop it)")


def test_the_nccl_version_prints_as_text_where_it_was_read():
    assert gpu.nccl_measured(NCCL, "img") == ("NCCL torch loads", "2.28.9", f"{NCCL['path']} build id {NCCL['build_id']}; "
                                                                             "NCCL_VERSION=unset in img")
    assert gpu.nccl_measured(H200_NCCL, "python3")[1:] == ("2.28.9", f"{LIBNCCL} build id {H200_NCCL['build_id']}; "
                                                                      "NCCL_VERSION=2.28.3-1 in python3")


def test_the_driver_the_profile_names():
    # Our H200's nvidia-smi --query-gpu=... --format=csv: driver 580.159.04.
    installed = parse("nvidia_smi_query", read_capture("ours/nvidia_smi/h200-query-gpu-csv.txt"))[0]["driver_version"]
    assert installed == "580.159.04"
    assert host.judge_driver_profile("h200", installed, "580.159.04") == []
    [f] = host.judge_driver_profile("h200", installed, "580.173.02")
    assert codes([f]) == [(Code.DRIVER_PROFILE, "h200", False)]
    assert f.text == ("[driver-profile] h200: saw driver 580.159.04; expected driver 580.173.02 (expect.driver_version)\n"
                      "  fix: install driver 580.173.02 on h200 (the version the profile names), then reboot it; or fix "
                      "expect.driver_version after checking the new driver on one node")


def test_the_one_gpu_run_passes_the_device_profile():
    profile = load_cluster(DEVICE_CLUSTER)
    assert gpu.judge_compute("h200", H200, SAMPLES, None, profile.expect, ("h200", H200["tflops"])) == []


def test_the_h200_image_nccl_variable_lies():
    # The machine's CUDA image sets NCCL_VERSION=2.28.3-1; torch 2.11.0+cu130 loads the pip wheel's 2.28.9.
    assert {k: H200_NCCL[k] for k in ("path", "version", "version_code", "build_id", "env_nccl_version", "static")} == {
        "path": LIBNCCL, "version": "2.28.9", "version_code": 22809, "build_id": "9fcf74d93a8c3605bf7718f594d0a24366e38536",
        "env_nccl_version": "2.28.3-1", "static": False}
    profile = load_cluster(DEVICE_CLUSTER)
    [f] = gpu.judge_nccl_identity("h200", "h200", H200_NCCL, H200_NCCL, profile.deploy.nccl, profile.deploy.image,
                                  profile.deploy.canary_python)
    assert codes([f]) == [(Code.IMAGE_NCCL_ENV_STALE, "h200", True)]
    # the pin (the x2 machine's library, same build id) holds; only the variable is wrong, and it is the environment the
    # canary's python runs in (no docker there), not the image's
    assert profile.deploy.canary_python == "python3"
    assert f.text.startswith("[image-nccl-env-stale] h200: saw NCCL_VERSION=2.28.3-1 in the environment deploy.canary_python "
                             f"(python3) runs in, but torch loads NCCL 2.28.9 {LIBNCCL} build id 9fcf74d9")
    assert "where python3 runs on h200" in f.text and "rebuild the image" not in f.text and "the image's" not in f.text


def test_the_second_run_agrees_with_the_first():
    # The same programs on a later lease: 1.5% slower (the GPU still warm from a run a minute before), the same library.
    assert (R2["tflops"], R2["iterations"], R2["device"], R2["torch"]) == (655.6855, 5930, "NVIDIA H200", "2.11.0+cu130")
    load = gpu.load_of(R2_SAMPLES)
    assert (load.samples, load.sm_clock_mhz, load.power_w, load.temperature_c, load.reason_text) == \
        (21, 1440.0, 692.01, 69.0, "sw_power_cap")
    profile = load_cluster(DEVICE_CLUSTER)
    assert gpu.judge_compute("run-2", R2, R2_SAMPLES, None, profile.expect, ("run-1", H200["tflops"])) == []
    assert {k: R2_NCCL[k] for k in ("path", "version", "build_id")} == {k: H200_NCCL[k] for k in ("path", "version", "build_id")}
    found = gpu.judge_nccl_identity("run-2", "run-1", R2_NCCL, H200_NCCL, profile.deploy.nccl, profile.deploy.image)
    assert codes(found) == [(Code.IMAGE_NCCL_ENV_STALE, "run-2", True)]  # the variable again; path, version, build id equal


def outcomes(junit: str) -> dict[str, str]:
    return {c.get("name"): ("skipped" if c.find("skipped") is not None else "failed" if c.find("failure") is not None
                            else "passed") for c in ET.fromstring(junit).iter("testcase")}


def test_the_preflight_through_the_local_connection_passed_on_the_h200():
    assert outcomes(read_capture("ours/raw/gpu_canary/h200-1gpu-preflight-junit.xml")) == {
        "test_ssh_user[h200]": "passed", "test_os_parity[NOTSET]": "skipped", "test_gpu_name[h200]": "passed",
        "test_driver_parity[h200]": "passed", "test_driver_same_as_head[NOTSET]": "skipped",
        "test_driver_version[h200]": "passed", "test_gpu_compute[h200]": "passed", "test_image_nccl[h200]": "passed"}


def test_the_second_preflight_ran_test_image_kernels_and_it_passed():
    # Run 2: the same files, now with test_image_kernels (torch op and Triton 3.6.0 kernel with the machine's python3)
    junit = read_capture("ours/raw/gpu_canary/h200-1gpu-r2-preflight-junit.xml")
    assert outcomes(junit) == {
        "test_ssh_user[h200]": "passed", "test_os_parity[NOTSET]": "skipped", "test_gpu_name[h200]": "passed",
        "test_driver_parity[h200]": "passed", "test_driver_same_as_head[NOTSET]": "skipped",
        "test_driver_version[h200]": "passed", "test_gpu_compute[h200]": "passed", "test_image_kernels[h200]": "passed",
        "test_image_nccl[h200]": "passed"}
    measured = [p.get("value") for p in ET.fromstring(junit).iter("property") if p.get("name") == "gb10check_measurement"]
    assert measured[0] == "('matmul', 'h200', 655.447, 'TFLOP/s (bfloat16 on NVIDIA H200)')"
    assert measured[1] == "('SM clock under load (median)', 'h200', 1440.0, 'MHz of 1980.0')"


def swap(name: str) -> dict:
    """The NCCL canary's line on the real H200 with another NCCL build swapped in (selftests/captures/README.md, run 3)."""
    return json.loads(read_capture(f"ours/raw/gpu_canary/nccl-swap/h200-nccl-{name}.json"))


def banner(name: str) -> str:
    """The version NCCL printed when a real all_reduce ran under the same environment (NCCL_DEBUG=VERSION)."""
    return re.search(r"NCCL version (\S+)\+", read_capture(f"ours/raw/gpu_canary/nccl-swap/h200-nccl-{name}-allreduce.txt"))[1]


@pytest.mark.parametrize("name", ["pip", "ld-preload-system", "ld-library-path-system", "vllm-so-path-system"])
def test_the_canary_names_the_library_that_really_ran_the_all_reduce(name):
    found = swap(name)
    assert found["version"] == banner(name)
    assert found["torch_nccl"] == "2.28.9"  # torch's own idea, the same in every run: its build, not what runs


def test_a_preloaded_system_nccl_on_one_node_differs_from_rank_0():
    preload, pip = swap("ld-preload-system"), swap("pip")
    assert (preload["version"], preload["path"], preload["chosen_by"]) == ("2.28.3", "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3",
                                                                          "global symbol")
    assert len(preload["libraries"]) == 2  # both mapped: torch's own stays, unused
    found = gpu.judge_nccl_identity("b", "a", preload, pip, None, "img")
    assert codes(found) == [(Code.IMAGE_NCCL_DIFFERS, "b", False)]  # its NCCL_VERSION (2.28.3-1) is right for once
    assert found[0].text.startswith("[image-nccl-differs] b: saw NCCL 2.28.3 /usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3 build id "
                                    "25ddf25afee0a4238fbfda538f005c27f6d33825 (path, version, build_id differ); expected NCCL "
                                    f"2.28.9 {LIBNCCL} build id 9fcf74d93a8c3605bf7718f594d0a24366e38536 as on a")


def test_vllm_nccl_so_path_splits_the_process_and_differs_from_rank_0():
    split, pip = swap("vllm-so-path-system"), swap("pip")
    found = gpu.judge_nccl_identity("b", "a", split, pip, None, "img")
    assert codes(found) == [(Code.IMAGE_NCCL_DIFFERS, "b", False), (Code.IMAGE_NCCL_SPLIT, "b", True),
                            (Code.IMAGE_NCCL_ENV_STALE, "b", True)]
    assert found[0].text.startswith("[image-nccl-differs] b: saw vLLM's pynccl loads NCCL 2.28.3 "
                                    "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3 build id 25ddf25a")
    assert found[1].text.startswith(f"[image-nccl-split] b: saw torch's NCCL calls reach NCCL 2.28.9 {LIBNCCL} build id "
                                    "9fcf74d93a8c3605bf7718f594d0a24366e38536; vLLM's pynccl (/usr/lib/x86_64-linux-gnu/"
                                    "libnccl.so.2.28.3) loads NCCL 2.28.3")
    assert "fix: load one NCCL in the container" in found[1].text
    # LD_LIBRARY_PATH does not reach torch (its RPATH wins): the same as no swap at all
    assert codes(gpu.judge_nccl_identity("b", "a", swap("ld-library-path-system"), pip, None, "img")) == \
        [(Code.IMAGE_NCCL_ENV_STALE, "b", True)]
