"""Stand-ins rendered as pure functions (no simulated cluster): a node's stand-in state in, the tool's text out, read
back with the suite's own parser and judged as the check judges it. A scenario's state change (its Step.state merged as
`gb10check.sim.scenarios.apply` merges it) must make the judge fail; the healthy state must pass."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gb10check.checks import gpu, platform
from gb10check.cluster import Expect
from gb10check.facts import parse
from gb10check.gather import SMI_SAMPLE
from gb10check.remedies import Code
from gb10check.sim import scenarios
from gb10check.sim.control import node_state
from gb10check.sim.standins import dd, dmesg, lspci, matmul, nvidia_smi
from gb10check.sim.topology import pair_or_switch
from gb10check.gather import LSPCI

NODES = pair_or_switch(2)
SIM = Expect(profile="sim")  # the simulated cluster's profile (gb10check/profiles/sim.yaml): the GB10's compute floors
SIM_NETDEVS = {"0000:01:00.0": "enp1s0f0np0", "0002:01:00.0": "enP2p1s0f0np0"}  # the ethtool stand-in's bus-info


def state(rank: int, scenario: str | None = None) -> dict:
    """Node `rank`'s stand-in state as `gb10check sim up` writes it, with the scenario's state steps merged in."""
    s = node_state(NODES[rank])
    for step in scenarios.SCENARIOS[scenario].steps if scenario else ():
        if step.state and step.rank in (-1, rank):
            s = scenarios.merge(s, step.state)
    return s


def args_of(command: str) -> list[str]:
    return command.split()[1:]


# ---- lspci -------------------------------------------------------------------------------------


def test_lspci_healthy_is_gen5_x4_everywhere():
    text, rc = lspci.render(state(1), args_of(LSPCI), root=True)
    assert rc == 0
    functions = parse("lspci", text)
    assert [(f.address, str(f.sta), f.sta.width_mark) for f in functions] == [
        (a, "32GT/s x4", "ok") for a in ("0000:01:00.0", "0000:01:00.1", "0002:01:00.0", "0002:01:00.1")]
    assert "\tLnkSta:\tSpeed 32GT/s (ok), Width x4 (ok)\n" in text
    assert "\n\n0000:01:00.1 Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]\n" in text
    assert platform.judge_pcie("pgx-32", functions, SIM_NETDEVS, 32.0, 4) == []


def test_lspci_pcie_gen5_x2_scenario_fails_the_second_controller():
    text, _ = lspci.render(state(1, "pcie-gen5-x2"), args_of(LSPCI), root=True)
    assert "\tLnkSta:\tSpeed 32GT/s (ok), Width x2 (downgraded)\n" in text
    found = platform.judge_pcie("thinkstationpgx-32", parse("lspci", text), SIM_NETDEVS, 32.0, 4)
    assert [(f.code, f.where) for f in found] == [(Code.PCIE_DEGRADED, "thinkstationpgx-32:0002:01:00.0"),
                                                  (Code.PCIE_DEGRADED, "thinkstationpgx-32:0002:01:00.1")]
    assert found[0].seen.startswith("0002:01:00.0 (enP2p1s0f0np0) Mellanox Technologies MT2910 Family [ConnectX-7]: "
                                    "LnkSta 32GT/s x2 (downgraded), LnkCap 32GT/s x4 (width below)")
    # Rank 0 is untouched by the scenario.
    text0, _ = lspci.render(state(0, "pcie-gen5-x2"), args_of(LSPCI), root=True)
    assert platform.judge_pcie("thinkstationpgx-30", parse("lspci", text0), SIM_NETDEVS, 32.0, 4) == []


def test_lspci_without_root_and_with_a_filter():
    text, _ = lspci.render(state(0), ["-vv"], root=False)
    assert text.count("\tCapabilities: <access denied>\n") == 4
    assert text.startswith("0000:01:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n")
    [f] = platform.judge_pcie("pgx", parse("lspci", text), {}, 32.0, 4)
    assert f.not_checked
    one, _ = lspci.render(state(0), ["-vv", "-s", "0002:01:00.1"], root=True)
    assert [f.address for f in parse("lspci", one)] == ["0002:01:00.1"]
    assert lspci.render(state(0), ["-d", "10de:"], root=True)[0] == ""
    assert lspci.render(state(0), [], root=True)[0].splitlines()[0] == (
        "0000:01:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]")


# ---- nvidia-smi: the compute canary's sampling query --------------------------------------------

SAMPLE_ARGS = args_of(SMI_SAMPLE)


def matmul_line(s: dict, capsys, *args: str) -> dict:
    """The compute canary's JSON line as the stand-in answers it in a node of state `s` (--seconds 0: no wait)."""
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matmul.common, "state", lambda: s)
        assert matmul.answer(["--seconds", "0", *args], "/nonexistent/bin/python3") == 0
    return json.loads(capsys.readouterr().out)


def samples(s: dict, n: int = 6) -> str:
    """What the background sampler's file holds after n samples: its command line (gather writes it) and the rows."""
    lines, rc = nvidia_smi.query_rows(s, SAMPLE_ARGS, SMI_SAMPLE.split("--query-gpu=")[1].split()[0])
    assert rc == 0
    return f"$ {SMI_SAMPLE}\n" + "\n".join(lines * n) + "\n"


def test_the_sampling_query_is_answered_as_on_a_real_gpu(capsys):
    assert nvidia_smi.loop_seconds(SAMPLE_ARGS) == 0.5
    assert nvidia_smi.loop_seconds(["-l", "2"]) == 2.0 and nvidia_smi.loop_seconds(["-L"]) is None
    text = samples(state(0))
    assert text.splitlines()[1] == "2405, 3003, 38.52, 52, 0x0000000000000000"  # noheader,nounits: as the H200 capture
    rows = parse("nvidia_smi_query", text)
    assert rows[0] == {"clocks_current_sm_mhz": 2405.0, "clocks_max_sm_mhz": 3003.0, "power_draw_w": 38.52, "temperature_gpu": 52.0,
                       "clocks_event_reasons_active": "0x0000000000000000"}
    # With the header: the canonical names nvidia-smi prints for the aliases.
    header, _ = nvidia_smi.query_rows(state(0), ["--format=csv"], "clocks.sm,clocks_throttle_reasons.active,power.draw")
    assert header == ["clocks.current.sm [MHz], clocks_event_reasons.active, power.draw [W]", "2405 MHz, 0x0000000000000000, 38.52 W"]
    assert gpu.judge_compute("pgx-30", matmul_line(state(0), capsys), rows, None, SIM, None) == []
    bad, rc = nvidia_smi.query_rows(state(0), [], "clocks.bogus")
    assert (bad, rc) == (['Field "clocks.bogus" is not a valid field to query.', ""], 2)


def test_gpu_stuck_low_power_fails_the_clock_floor(capsys):
    rows = parse("nvidia_smi_query", samples(state(1, "gpu-stuck-low-power")))
    run = matmul_line(state(1, "gpu-stuck-low-power"), capsys)
    [f] = gpu.judge_compute("thinkstationpgx-32", run, rows, None, SIM, None)
    assert f.code is Code.GPU_CLOCK_LOW
    assert f.text.startswith("[gpu-clock-low] thinkstationpgx-32: saw SM clock 801 MHz under load (median of 6 samples, max "
                             "3003.0 MHz), 19.6 W, reasons none; expected >= 1200 MHz (expect.min_sm_clock_mhz)\n"
                             "  fix: power thinkstationpgx-32 off at the wall")
    assert gpu.judge_compute("thinkstationpgx-30", run, parse("nvidia_smi_query", samples(state(0, "gpu-stuck-low-power"))),
                             None, SIM, None) == []


@pytest.mark.parametrize("rank", [0, 1])
def test_every_scenario_state_renders(rank):
    """Every scenario's stand-in state still renders both tools (a state key a stand-in cannot read shows here)."""
    for name in scenarios.SCENARIOS:
        s = state(rank, name)
        assert lspci.render(s, args_of(LSPCI), root=True)[1] == 0
        assert nvidia_smi.query_rows(s, SAMPLE_ARGS, "clocks.sm,power.draw")[1] == 0


# ---- the compute canary (matmul) and dd: the figures of hardware the machine lacks, from the state -----------------

CANARY = Path(gpu.__file__).resolve().parent.parent / "canary" / "matmul.py"
H200_LINE = {"tflops": 665.9505, "tflops_median": 664.2117, "iterations": 6020, "seconds": 10.002, "device": "NVIDIA H200",
             "backend": "cuda", "dtype": "bfloat16", "n": 8192, "torch": "2.11.0+cu130"}  # the keys of our H200's line


def test_the_matmul_stand_in_answers_the_canary_as_on_cuda(capsys):
    assert CANARY.read_bytes().startswith(matmul.MATMUL)  # the program the stand-in recognises is the canary
    line = matmul_line(state(0), capsys, "--n", "4096")
    assert set(line) == set(H200_LINE)
    assert (line["tflops"], line["tflops_median"], line["device"], line["backend"], line["dtype"], line["n"]) == \
        (90.0, 90.0, "NVIDIA GB10", "cuda", "bfloat16", 4096)
    assert gpu.judge_compute("pgx-30", line, None, "no samples", SIM, ("pgx-30", 90.0))[0].code is Code.GPU_NOT_SAMPLED


def test_gpu_compute_slow_fails_the_floor_and_the_spread(capsys):
    fast, slow = (matmul_line(state(rank, "gpu-compute-slow"), capsys) for rank in (0, 1))
    rows = parse("nvidia_smi_query", samples(state(1, "gpu-compute-slow")))
    found = gpu.judge_compute("thinkstationpgx-32", slow, rows, None, SIM, ("thinkstationpgx-30", gpu.compute_rate(fast)))
    assert [f.code for f in found] == [Code.GPU_COMPUTE_LOW, Code.GPU_COMPUTE_SPREAD]
    assert found[1].seen == "36 TFLOP/s, 60% slower than thinkstationpgx-30 (90 TFLOP/s)"
    assert gpu.judge_compute("thinkstationpgx-30", fast, rows, None, SIM, ("thinkstationpgx-30", 90.0)) == []


def test_the_matmul_stand_in_hands_any_other_program_to_the_real_python(tmp_path):
    """Run for real: its python3 link first on the PATH, a state file present (a container given the GPU)."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python3").symlink_to(Path(matmul.__file__).with_name("__main__.py"))
    (tmp_path / "state.json").write_text(json.dumps(state(0)))
    run = (f"import sys; sys.path.insert(0, {str(Path(gpu.__file__).resolve().parents[2])!r}); "
           f"from gb10check.sim.standins import common, image_python; common.STATE = {str(tmp_path / 'state.json')!r}; "
           f"sys.argv[0] = {str(tmp_path / 'bin' / 'python3')!r}; image_python.python3(sys.argv[1:])")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", run, "-", "x"], input="import sys; print(sys.argv, 6 * 7, sys.executable)", env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout == f"['-', 'x'] 42 {Path(sys.executable).parent / 'python3'}\n", done.stderr
    canary = subprocess.run([sys.executable, "-c", run, "-", "--seconds", "0"], input=CANARY.read_text(), env=env,
                            capture_output=True, text=True, timeout=60)
    assert json.loads(canary.stdout)["tflops"] == 90.0, canary.stderr


GNU_DD = ("256+0 records in\n256+0 records out\n1073741824 bytes (1.1 GB, 1.0 GiB) copied, 0.21 s, 5.1 GB/s\n")


def test_dd_reports_the_state_rate_for_a_direct_read_only():
    args = ["if=/h/blobs/3f2a", "of=/dev/null", "bs=4M", "count=256", "iflag=direct"]
    slow = dd.reported(args, 0, GNU_DD, scenarios.merge({}, [s for s in scenarios.SCENARIOS["disk-slow"].steps if s.state][0].state)
                       ["disk_read_bytes_s"])
    assert slow.splitlines()[:2] == GNU_DD.splitlines()[:2]
    run = parse("dd", slow)
    assert run.bytes == 1073741824 and run.bytes_per_s == pytest.approx(109143442, rel=1e-5)
    assert slow.splitlines()[2].endswith(" s, 109 MB/s")
    assert parse("dd", dd.reported(args, 0, GNU_DD, dd.HEALTHY_READ_BYTES_S)).bytes_per_s == pytest.approx(309239753, rel=1e-5)
    assert dd.reported(args[:-1], 0, GNU_DD, 1e6) == GNU_DD  # a cached read measures memory: as dd said it
    failed = "dd: failed to open '/h/blobs/3f2a': Invalid argument\n"
    assert dd.reported(args, 1, failed, 1e6) == failed
    assert [dd.si(r) for r in (309239753, 109143442, 10.5e6, 4e6, 1.3e9)] == ["309 M", "109 M", "10.5 M", "4.0 M", "1.3 G"]


# ---- dmesg -------------------------------------------------------------------------------------

REAL_DMESG = "[    0.000000] Linux version 6.17.0-1014-nvidia (buildd@host) #14-Ubuntu SMP\n[   12.345678] mlx5_core 0000:01:00.0: enabled\n"


def kernel_log_of(s: dict):
    return parse("kernel_log", "-- source: dmesg --\n" + dmesg.render(s, REAL_DMESG, []))


def test_dmesg_healthy_is_the_real_log_only():
    assert dmesg.render(state(1), REAL_DMESG, []) == REAL_DMESG
    assert platform.judge_kernel_log("pgx-32", kernel_log_of(state(1))) == []


def test_dmesg_gpu_xid_scenario_warns_with_the_lines():
    found = platform.judge_kernel_log("pgx-32", kernel_log_of(state(1, "gpu-xid")))
    assert [(f.code, f.warning, f.params["what"]) for f in found] == [(Code.KERNEL_LOG, True, "GPU Xid error"),
                                                                      (Code.KERNEL_LOG, True, "NV_ERR_NO_MEMORY")]
    assert "[ 4021.118204] NVRM: Xid (PCI:000f:01:00): 31, pid=20417, name=python3" in found[0].text
    assert platform.judge_kernel_log("pgx-30", kernel_log_of(state(0, "gpu-xid"))) == []  # rank 0's log is the real one
    assert dmesg.render(state(1, "gpu-xid"), REAL_DMESG, ["-T"]) == REAL_DMESG  # another layout: the real log only


@pytest.mark.parametrize("name", ["cx7-pcie-fatal", "cpu-soft-lockup", "overheated"])
def test_dmesg_kernel_log_scenarios_report_what_they_prove(name):
    """Rank 1's log, through the gather's own filter (the real grep), judged: exactly the codes the scenario declares,
    each a failure or a warning as its sign says; rank 0's log stays clean."""
    import subprocess

    from gb10check.gather import commands

    kept = subprocess.run(["grep", "-aiE", commands.KERNEL_LOG_SIGNS], input=dmesg.render(state(1, name), REAL_DMESG, []),
                          capture_output=True, text=True, timeout=10).stdout
    found = platform.judge_kernel_log("pgx-32", parse("kernel_log", "-- source: dmesg --\n" + kept))
    assert {f"test_kernel_log:{f.code.value}" for f in found} == set(scenarios.SCENARIOS[name].proves)
    signs = {s.code: s.warning for s in platform.KERNEL_SIGNS}
    assert all(f.warning == signs[f.code] for f in found)
    assert platform.judge_kernel_log("pgx-30", kernel_log_of(state(0, name))) == []
