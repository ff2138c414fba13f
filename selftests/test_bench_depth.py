"""bench/depth_sweep_vs_llama_benchy.py without a server: its arguments (from the command line or the cluster file),
the llama-benchy 0.4.0 command it runs, how it reads llama-benchy's JSON report, and the ratio table it prints."""

import importlib.util
from pathlib import Path

import pytest

from gb10check import depth

REPO = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("depth_bench", REPO / "bench" / "depth_sweep_vs_llama_benchy.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_arguments_from_the_cluster_file():
    a = bench.parse_args([f"--cluster={REPO / 'cluster.example.yaml'}"])
    assert (a.base_url, a.model, a.tokenizer) == ("http://thinkstationpgx-30.local:20001/v1", "qwen3.8-flash-next",
                                                  "Qwen/Qwen3.8-Flash-Next-FP8")
    assert (a.depth, a.pp, a.tg, a.runs, a.api_key_env) == ([0, 4096, 16384], 2048, 32, 3, "GB10CHECK_API_KEY")
    b = bench.parse_args([f"--cluster={REPO / 'cluster.example.yaml'}", "--depth", "0", "1024", "--tg", "64"])
    assert (b.depth, b.tg, b.pp) == ([0, 1024], 64, 2048)


def test_arguments_without_a_cluster_file():
    a = bench.parse_args(["--base-url", "http://h:8000/v1", "--model", "m"])
    assert (a.depth, a.pp, a.tg, a.runs, a.tokenizer) == ([0, 4096, 16384], 2048, 32, 3, "m")


@pytest.mark.parametrize("argv, message", [([], "give --base-url and --model, or --cluster=FILE"),
                                           (["--base-url", "u", "--model", "m", "--tg", "1"], "--tg must be at least 2"),
                                           (["--base-url", "u", "--model", "m", "--depth", "-1"], "depths must be >= 0")])
def test_bad_arguments_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.parse_args(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_the_llama_benchy_command_uses_the_same_depths_and_lengths():
    a = bench.parse_args(["--base-url", "http://h:8000/v1", "--model", "served", "--tokenizer", "org/model", "--depth", "0",
                          "4096", "--pp", "512", "--tg", "16", "--runs", "2"])
    assert bench.llama_benchy_command(a, "/tmp/out.json") == [
        "llama-benchy", "--base-url", "http://h:8000/v1", "--model", "org/model", "--served-model-name", "served",
        "--pp", "512", "--tg", "16", "--depth", "0", "4096", "--runs", "2", "--exact-tg", "--no-cache",
        "--latency-mode", "generation", "--format", "json", "--save-result", "/tmp/out.json"]


def metric(mean):
    return {"mean": mean, "std": 0.5, "values": [mean - 0.5, mean + 0.5]}


# The shape of llama-benchy 0.4.0's --format json report (its BenchmarkReport: metadata, then `benchmarks`), with our numbers.
REPORT = {"version": "0.4.0", "latency_mode": "generation", "model": "org/model", "max_concurrency": 1, "benchmarks": [
    {"concurrency": 1, "context_size": 0, "prompt_size": 512, "response_size": 16, "is_context_prefill_phase": False,
     "pp_throughput": metric(1000.0), "tg_throughput": metric(20.0), "ttfr": metric(500.0)},
    {"concurrency": 1, "context_size": 4096, "prompt_size": 512, "response_size": 16, "is_context_prefill_phase": False,
     "pp_throughput": metric(800.0), "tg_throughput": None},
]}


def test_llama_benchys_report_is_read_per_depth():
    assert bench.read_llama_benchy(REPORT) == {("pp", 0): 1000.0, ("tg", 0): 20.0, ("pp", 4096): 800.0}


def test_the_ratio_table():
    ours = {("pp", 0): 950.0, ("tg", 0): 21.0, ("pp", 4096): 780.0, ("tg", 4096): 18.0}
    text = bench.ratio_table("served", 512, 16, ours, bench.read_llama_benchy(REPORT))
    lines = text.splitlines()
    assert [c.strip() for c in lines[0].split("|")[1:-1]] == ["model", "test", "gb10check t/s", "llama-benchy t/s", "ratio"]
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in lines[2:]]
    assert rows == [["served", "pp512", "950.00", "1000.00", "0.950"], ["served", "tg16", "21.00", "20.00", "1.050"],
                    ["served", "pp512 @ d4096", "780.00", "800.00", "0.975"], ["served", "tg16 @ d4096", "18.00", "", ""]]


def test_ours_by_depth():
    sweep = depth.Sweep("m", 512, 16, [depth.DepthRun(0, 520, 0.5, 20.0, 16), depth.DepthRun(0, 520, 0.52, 22.0, 16)])
    assert bench.ours_by_depth(sweep) == {("pp", 0): pytest.approx((1040 + 1000) / 2), ("tg", 0): 21.0}
