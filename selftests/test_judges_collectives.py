"""The collectives canary's parser and judge (gb10check/facts/collectives.py, gb10check/checks/nccl.py judge_collectives)
on real NCCL logs: our two-H200 runs (selftests/captures/nccl_tests/h200x2-*: P2P over NVLink, and kept off P2P and
shared memory, NET/Socket, a real socket fallback) and a DGX Spark pair's NET/IB device line (public capture).

Each rank's output is built as the canary prints it: NCCL's own lines of that rank (the capture's lines of its device,
`[0]` or `[1]`) and the canary's lines, whose figures are the capture's own result rows (time, algbw, busbw of each
size), so every figure and every NCCL line judged was printed by a real run. The canary itself ran on one H200 (the last
section: one rank alone, two ranks refused on one GPU, a bootstrap without its interface); two GPUs were not lent since."""

import base64
import json
import re
from pathlib import Path

import pytest

from gb10check import canary, gather
from gb10check.checks.nccl import SMALL, RankRun, judge_collectives
from gb10check.cluster import Expect, load_cluster
from gb10check.facts import ParseError, parse
from gb10check.remedies import REMEDIES, Code

from .conftest import read_capture

P2P = "ours/nccl_tests/h200x2-all_reduce_perf-8-256M-f4-g2-p2p.txt"
SOCKET = "ours/nccl_tests/h200x2-all_reduce_perf-8-256M-f4-g2-socket.txt"
GATHER = "ours/nccl_tests/h200x2-all_gather_perf-1G-g2.txt"
SPARK_IB = ("nccl_tests/dgxspark-pair-nccl-2.30.7-NCCL_DEBUG-lines-GDR-disabled-dlvsym-dmabuf-symmetric-mem-author-selected-no-prefix-"
            "idx67223248947.txt")
H200 = Expect(profile="h200")


def nccl_lines(capture: str, device: int) -> list[str]:
    """The capture's NCCL lines printed by the thread of one CUDA device (`vm:1103:1121 [1] NCCL INFO ...`)."""
    return [l for l in read_capture(capture).splitlines() if re.search(rf"\[{device}\] NCCL (?:INFO|WARN)", l)]


def rows_of(capture: str, op: str) -> list[str]:
    """The capture's result rows (out-of-place) as the canary's result lines."""
    out = []
    for r in parse("nccl_tests", read_capture(capture)).rows:
        out.append("gb10check-collective " + json.dumps({"rank": 0, "op": op, "size": r.size_bytes, "iters": 20,
                   "time_us": r.oop_time_us, "algbw": r.oop_algbw_gbps / 8, "busbw": r.oop_busbw_gbps / 8, "wrong": 0}))
    return out


def rank_output(rank: int, nccl: list[str], results: list[str], done: bool = True, env: dict | None = None) -> str:
    start = "gb10check-collective-start " + json.dumps({"rank": rank, "world": 2, "host": "vm", "device": rank,
                                                        "gpu": "NVIDIA H200", "nccl": "2.28.9", "env": env or {}})
    end = ["gb10check-collective-done " + json.dumps({"rank": rank})] if done else []
    return "\n".join([start, *nccl, *results, *end]) + "\n"


def h200_ranks(capture: str, env: dict | None = None) -> list[RankRun]:
    """Both ranks of one H200 machine (one node: NVLink between them is no network path to judge)."""
    results = rows_of(capture, "all_reduce") + rows_of(GATHER, "all_gather")
    ranks = []
    for rank in (0, 1):
        text = rank_output(rank, nccl_lines(capture, rank), results, env=env)
        ranks.append(RankRun("h200", rank, {}, 0, text, parse("nccl_collectives", text)))
    return ranks


def test_the_p2p_run_reads_and_passes():
    ranks = h200_ranks(P2P)
    run = ranks[0].run
    assert run.done and run.rank == 0 and run.world == 2 and run.nccl_version == "2.28.9"
    assert run.transports == ["P2P"] and run.network == "Socket"  # the plug-in line is no transport
    assert {c.side for c in run.channels} == {None} and all(c.net_device is None for c in run.channels)
    assert run.at("all_reduce", SMALL).time_us == 17.25
    assert run.largest("all_reduce").size == 134217728 and run.largest("all_gather").size == 1 << 30
    assert judge_collectives(ranks, H200) == []


def test_the_socket_fallback_fails_with_what_nccl_found():
    ranks = h200_ranks(SOCKET, env={"NCCL_IB_HCA": "=mlx5_9", "NCCL_SOCKET_IFNAME": "eth0"})
    run = ranks[1].run
    assert run.transports == ["NET/Socket"] and run.net_ib_devices == [] and run.net_socket_devices == ["eth0:192.0.2.2<0>"]
    assert [c.side for c in run.channels[:4]] == ["receive", "receive", "send", "send"]
    findings = judge_collectives(ranks, H200)
    socket = [f for f in findings if f.code == Code.NCCL_SOCKET]
    assert [f.where for f in socket] == ["h200 (rank 0)", "h200 (rank 1)"] and not any(f.warning for f in socket)
    assert socket[1].seen == ("4 channel line(s) via NET/Socket (socket fallback); NCCL found no IB device (NET/IB : No device "
                              "found); its NCCL_IB_HCA==mlx5_9, NCCL_SOCKET_IFNAME=eth0")
    assert socket[1].params["hca"] == "=mlx5_9"
    # the real fallback's figure: 128 MB all_reduce at 28.8 Gb/s, under the floor
    [bw] = [f for f in findings if f.code == Code.COLLECTIVES_BANDWIDTH]
    assert bw.seen == "all_reduce bus bandwidth 28.8 Gb/s (3.60 GB/s) at 134217728 bytes" and bw.expected == ">= 120 Gb/s"


# ---- the channel map: NET/IB lines of a pair, the device numbers from a real DGX Spark `NET/IB : Using` line -------------

SPARK_LINKS = {"rocep1s0f1": "192.168.100.0/24", "roceP2p1s0f1": "192.168.101.0/24"}


def pair(rank0_dev: int, rank1_dev: int, hcas1: dict | None = None, results: list[str] | None = None) -> list[RankRun]:
    """A pair whose channel 00 runs 0 -> 1 on rank 0's NET/IB/<rank0_dev> and rank 1's NET/IB/<rank1_dev>: the real
    `NET/IB : Using` line on both, channel lines in the real capture's wording with NET/IB in place of NET/Socket."""
    using = [l for l in read_capture(SPARK_IB).splitlines() if "NET/IB : Using" in l]
    results = results if results is not None else rows_of(P2P, "all_reduce") + rows_of(GATHER, "all_gather")
    out = []
    for rank, dev, node in ((0, rank0_dev, "spark-a"), (1, rank1_dev, "spark-b")):
        side = "send" if rank == 0 else "receive"
        lines = [f"spark-{rank}:1:2 [0] {using[0]}", "spark:1:2 [0] NCCL INFO Using network IB",
                 f"spark:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [{side}] via NET/IB/{dev}"]
        text = rank_output(rank, lines, results)
        out.append(RankRun(node, rank, dict(hcas1 if hcas1 is not None and rank == 1 else SPARK_LINKS), 0, text,
                           parse("nccl_collectives", text)))
    return out


def test_a_channel_on_one_subnet_passes_and_one_across_two_fails():
    ranks = pair(1, 1)
    assert ranks[0].run.net_ib_devices == ["rocep1s0f1:1/RoCE", "roceP2p1s0f1:1/RoCE"]
    assert ranks[0].run.hca_of(ranks[0].run.channels[0]) == "roceP2p1s0f1"
    assert judge_collectives(ranks, H200) == []
    [f] = judge_collectives(pair(0, 1), H200)
    assert f.code == Code.NCCL_CHANNEL_MAP and not f.warning and f.where == "spark-a (rank 0) -> spark-b (rank 1)"
    assert f.seen == ("channel 00 sends on spark-a's rocep1s0f1 (192.168.100.0/24) and is received on spark-b's "
                      "roceP2p1s0f1 (192.168.101.0/24)")


def test_an_hca_not_among_the_nodes_links_warns():
    [f] = judge_collectives(pair(0, 0, hcas1={"mlx5_0": "192.168.100.0/24"}), H200)
    assert f.code == Code.NCCL_CHANNEL_MAP and f.warning and f.where == "spark-b (rank 1)"
    assert "on rocep1s0f1, not an HCA of this node's links (mlx5_0)" in f.seen


def test_ranks_on_two_nodes_without_channel_lines_are_not_a_pass():
    results = rows_of(P2P, "all_reduce") + rows_of(GATHER, "all_gather")
    ranks = [RankRun(n, r, {}, 0, t, parse("nccl_collectives", t))
             for r, n in ((0, "a"), (1, "b")) for t in [rank_output(r, [], results)]]
    [f] = judge_collectives(ranks, H200)
    assert f.code == Code.NCCL_SOCKET and f.warning and "transport is unknown" in f.seen


# ---- figures ----------------------------------------------------------------------------------------------------------

def scaled(capture: str, op: str, factor: float, size: int | None = None) -> list[str]:
    """The capture's rows with the time of one size (every size when None) multiplied by factor."""
    out = []
    for line in rows_of(capture, op):
        d = json.loads(line.split(" ", 1)[1])
        if size is None or d["size"] == size:
            d.update(time_us=d["time_us"] * factor, algbw=d["algbw"] / factor, busbw=d["busbw"] / factor)
        out.append("gb10check-collective " + json.dumps(d))
    return out


def test_low_bandwidth_fails_and_slow_small_messages_warn():
    # The real NVLink figures slowed 200 times: 2263 Gb/s becomes 11.3 at 128 MB, 17 us becomes 3450 us at 8 KB.
    ranks = pair(1, 1, results=scaled(P2P, "all_reduce", 200) + rows_of(GATHER, "all_gather"))
    findings = judge_collectives(ranks, H200)
    assert [(f.code, f.warning) for f in findings] == [(Code.COLLECTIVES_BANDWIDTH, False), (Code.NCCL_LATENCY, True)]
    assert findings[0].seen == "all_reduce bus bandwidth 11.3 Gb/s (1.41 GB/s) at 134217728 bytes"
    assert findings[1].seen == "all_reduce of 8192 bytes takes 3450.0 us" and findings[1].expected == "<= 50 us"
    only_small = pair(1, 1, results=scaled(P2P, "all_reduce", 3, size=SMALL) + rows_of(GATHER, "all_gather"))
    assert [f.code for f in judge_collectives(only_small, H200)] == [Code.NCCL_LATENCY]  # 51.75 us


def test_wrong_values_fail():
    rows = rows_of(P2P, "all_reduce") + rows_of(GATHER, "all_gather")
    rows[-1] = rows[-1].replace('"wrong": 0', '"wrong": 12')
    [f] = judge_collectives(pair(1, 1, results=rows), H200)
    assert f.code == Code.NCCL_WRONG_VALUES and f.seen == "wrong values in all_gather at 1073741824 bytes (12)"


def test_a_rank_that_stopped_fails_with_its_words_and_ncclS_warn():
    ranks = pair(1, 1)
    warn = "spark:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 192.168.100.1<29533> failed : No route"
    error = 'gb10check-collective-error {"rank": 1, "error": "DistBackendError: NCCL error in: ProcessGroupNCCL.cpp"}'
    text = rank_output(1, [warn], [], done=False) + error + "\n"
    ranks[1] = RankRun("spark-b", 1, SPARK_LINKS, 1, text, parse("nccl_collectives", text))
    [f] = judge_collectives(ranks, H200)
    assert f.code == Code.COLLECTIVES_RUN and f.where == "spark-b (rank 1)"
    assert f.seen == ("DistBackendError: NCCL error in: ProcessGroupNCCL.cpp (NCCL WARN socketStartConnect: Connect to "
                      "192.168.100.1<29533> failed : No route) after 0 result line(s)")
    unread = RankRun("spark-b", 1, SPARK_LINKS, 125, "docker: Error response from daemon: unknown\n", None)
    [g] = judge_collectives([ranks[0], unread], H200)
    assert g.code == Code.COLLECTIVES_RUN and g.seen == "exit 125: docker: Error response from daemon: unknown"


@pytest.mark.parametrize("text, expected", [
    ("hello\n", "the collectives canary's lines"),
    ('gb10check-collective {"op": "all_reduce", "size": 8192}\n', "a result line with op, size"),
    ('gb10check-collective {"op": "broadcast", "size": 8, "time_us": 1, "algbw": 1, "busbw": 1, "wrong": 0}\n', "a result line"),
    ('gb10check-collective {"op": "all_reduce", "size": 8\n', "whole JSON"),
    ('gb10check-collective {"op": "all_reduce", "size": 8, "time_us": 1, "algbw": 1, "busbw": 1, "wrong": 0}\n' * 2,
     "each collective and size once"),
])
def test_garbled_output_is_an_error(text, expected):
    with pytest.raises(ParseError, match=re.escape(expected)):
        parse("nccl_collectives", text)


def test_every_new_code_has_its_fix():
    for code in (Code.COLLECTIVES_RUN, Code.NCCL_CHANNEL_MAP, Code.COLLECTIVES_BANDWIDTH, Code.NCCL_LATENCY):
        assert REMEDIES[code]


# ---- the command: each rank with its own node's environment -----------------------------------------------------------

def test_each_rank_gets_its_own_nodes_environment():
    cluster = load_cluster(Path(__file__).resolve().parent.parent / "cluster.example.yaml")
    own = {0: {"NCCL_IB_HCA": "=rocep1s0f1", "NCCL_SOCKET_IFNAME": "enp1s0f1np1", "HF_TOKEN": "secret", "NCCL_DEBUG": "WARN"},
           1: {"NCCL_IB_HCA": "=roceP2p1s0f1", "NCCL_SOCKET_IFNAME": "enP2p1s0f1np1"}}
    for rank, env in own.items():
        command, shown = gather.collectives_command(cluster, cluster.by_rank()[rank], env)
        encoded = re.search(r"echo (\S+) \| base64 -d \| timeout \d+ docker run ", command)[1]
        assert base64.b64decode(encoded).decode() == canary.source("collectives")
        assert f"-e NCCL_IB_HCA={env['NCCL_IB_HCA']} " in shown and f"-e NCCL_SOCKET_IFNAME={env['NCCL_SOCKET_IFNAME']} " in shown
        assert "HF_TOKEN" not in command and "secret" not in command  # only what steers NCCL, Gloo and the library
        assert f"--rank {rank} --world {len(cluster.nodes)} --master {cluster.rendezvous_addr(cluster.head)} " in shown
        assert "--network host --ipc host --ulimit memlock=-1" in shown


SIM_PYTHON = Path("/var/cache/gb10check/vllm-venv/bin/python3")  # gb10check/sim/provision.py's venv: CPU torch


@pytest.mark.skipif(not SIM_PYTHON.exists(), reason="no simulation venv (CPU torch) on this machine: gb10check sim provisions it")
def test_the_program_on_a_cpu_torch_says_so_and_the_check_skips():
    """The real program on a real CPU torch: its error line, which test_nccl_collectives takes for a skip (a CPU image)."""
    import subprocess

    from tests.network.test_nccl import CPU_BUILD

    done = subprocess.run([str(SIM_PYTHON), "-", "--rank", "0", "--world", "2", "--master", "127.0.0.1", "--port", "1"],
                          input=canary.source("collectives"), capture_output=True, text=True, timeout=120)
    run = parse("nccl_collectives", done.stdout)
    assert done.returncode == 1 and run.rank == 0 and not run.done and not run.rows
    assert CPU_BUILD in run.error and run.error.endswith("(a CPU build)"), run.error


# ---- the canary itself on a real GPU: one H200 (selftests/device/run_collectives_1gpu_h200.sh) ---------------------------

def h200_canary(name: str, rank: int = 0, rc: int = 0) -> RankRun:
    text = read_capture(f"ours/raw/gpu_canary/h200-collectives-1gpu-{name}-rank{rank}.txt")
    return RankRun("h200", rank, {}, rc, text, parse("nccl_collectives", text))


def test_the_canary_on_a_real_gpu_reads_every_size_of_both_collectives():
    run = h200_canary("alone").run
    assert run.done and run.error is None and (run.rank, run.world, run.nccl_version) == (0, 1, "2.28.9")
    assert run.env["NCCL_NVLS_ENABLE"] == "0" and run.network == "Socket" and run.channels == []
    sizes = [8 << 10 << i for i in range(16)]  # 8 KB to 256 MB, doubling
    for op in ("all_reduce", "all_gather"):
        assert [row.size for row in run.rows if row.op == op] == sizes and not any(row.wrong for row in run.rows)
    assert run.at("all_reduce", SMALL).time_us == 28.64 and run.largest("all_gather").size == 256 << 20


def test_one_rank_alone_never_passes_the_bandwidth_floor():
    """A rank alone moves nothing between nodes: nccl-tests' bus bandwidth is 0 for one rank, and the floor fails."""
    findings = judge_collectives([h200_canary("alone")], H200)
    assert [(f.code, f.seen) for f in findings] == [
        (Code.COLLECTIVES_BANDWIDTH, f"{op} bus bandwidth 0.0 Gb/s (0.00 GB/s) at 268435456 bytes")
        for op in ("all_reduce", "all_gather")]


def test_nccls_own_refusals_name_each_rank_in_one_line():
    shared = [h200_canary("shared", rank, rc=1) for rank in (0, 1)]
    findings = judge_collectives(shared, H200)
    assert [(f.code, f.where) for f in findings] == [(Code.COLLECTIVES_RUN, "h200 (rank 0)"), (Code.COLLECTIVES_RUN, "h200 (rank 1)")]
    assert findings[1].seen == ("ncclInvalidUsage: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 60 "
                                "after 0 result line(s)")
    [f] = judge_collectives([h200_canary("noif", rc=1)], H200)
    assert f.code == Code.COLLECTIVES_RUN and f.seen == ("ncclInvalidUsage: Bootstrap : no socket interface found "
                                                         "after 0 result line(s)")
    assert "\n" not in f.seen
