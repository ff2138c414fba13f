"""The run history (gb10check/history.py), its judgements (gb10check/trends.py) and the metrics text (gb10check/metrics.py):
the pure functions directly; the SQLite file under two concurrent writers, a writer killed inside its transaction, a
damaged file and a newer schema (each refused in one line, the file left byte for byte); the metrics read back by
Prometheus' own text parser; `gb10check history` listing and showing runs."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gb10check import history, metrics, trends
from gb10check.cli import main

from .inner_pytest import run_pytest

REPO = Path(__file__).resolve().parent.parent
A, B = "thinkstationpgx-30", "thinkstationpgx-32"
LINK = f"{A}:rocep1s0f0->{B}:rocep1s0f0"


def run_args(n: int = 0, bw: float = 109.0, green: bool = True, kernel: str = "6.17.0-1008-nvidia") -> dict:
    test = "tests/network/test_bandwidth.py::test_ib_write_bw[x]"
    return dict(started=1000.0 + n, cluster="pair", cluster_file="/c.yaml", cluster_sha256="ab" * 32,
                outcomes={test: "passed" if green else "failed"}, stages={test: "network"}, complete_stages=[],
                findings={test: [] if green else [{"code": "rdma-bandwidth", "severity": "failure", "where": LINK,
                                                   "seen": "41.3", "expected": ">= 90", "fix": "reseat"}]},
                measured=[("ib_write_bw", LINK, bw, "Gb/s"), ("NCCL torch loads", A, "2.28.9", "")],
                versions={A: {"kernel": kernel, "BIOS version": "5.36"}})


# ---- pure judgements ----

def test_version_changes_name_only_what_both_read_and_differs():
    before = {A: {"kernel": "6.17.0-1008", "docker": "28.3.3", "BIOS version": "5.36"}, B: {"kernel": "6.17.0-1008"}}
    after = {A: {"kernel": "6.17.0-1014", "docker": "28.3.3", "driver": "580.173.02"}, B: {"kernel": "6.17.0-1008"}}
    assert trends.version_changes(before, after) == [trends.Change(A, "kernel", "6.17.0-1008", "6.17.0-1014")]
    assert trends.version_changes(before, before) == []
    assert trends.version_changes({}, after) == []


def test_baseline_is_the_median_of_the_last_five_passing_runs():
    earlier = [50.0, 109.0, 108.0, 110.0, 109.5, 107.0]  # the 50 is older than the last five: not counted
    assert trends.baseline_drop("ib_write_bw", LINK, "Gb/s", 100.0, earlier, 0.10) is None  # 8% under 109
    drop = trends.baseline_drop("ib_write_bw", LINK, "Gb/s", 95.0, earlier, 0.10,
                                (trends.Change(B, "kernel", "a", "b"),))
    assert drop is not None and drop.baseline == 109.0 and drop.runs == 5 and round(drop.by, 3) == 0.128
    assert drop.text.startswith(f"[below-baseline] {LINK}: saw ib_write_bw 95.00 Gb/s, 13% under its baseline 109.00 "
                                "(the median of the last 5 passing runs); expected within 10%")
    assert f"changed since: {B}: kernel a -> b" in drop.text and "\n  fix: " in drop.text


def test_a_time_is_worse_when_it_grows_and_text_figures_have_no_baseline():
    assert trends.baseline_drop("ttft median", A, "s", 0.9, [1.0, 1.0], 0.10) is None  # faster: better
    drop = trends.baseline_drop("ttft median", A, "s", 1.2, [1.0, 1.0], 0.10)
    assert drop is not None and "20% over its baseline 1.00" in drop.text
    assert trends.baseline_drop("NCCL torch loads", A, "", "2.28.9", ["2.27.3"], 0.10) is None
    assert trends.baseline_drop("kv_cache_usage", A, "%", 10.0, [90.0], 0.10) is None  # not a figure of merit
    assert trends.baseline_drop("ib_write_bw", LINK, "Gb/s", 10.0, [], 0.10) is None  # nothing to compare with
    assert trends.direction("TFLOP/s (float32 on cpu)") == "higher"


def test_sparkline_and_trend_svg():
    assert trends.sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert trends.sparkline([5, 5]) == "▄▄" and trends.sparkline([]) == ""
    svg = trends.trend_svg("ib_write_bw x", [109.0, 108.0, 95.0], "Gb/s", 108.5)
    assert svg.startswith("<svg") and "<polyline" in svg and "stroke-dasharray" in svg and "109, 108, 95 Gb/s" in svg
    assert trends.trend_svg("one", [1.0], "s") == ""


# ---- metrics, read by Prometheus' own parser ----

def test_metrics_text_parses_one_family_per_figure_with_cluster_node_and_link():
    measured = [("ib_write_bw", LINK, 109.0, "Gb/s"), ("ib_write_bw", f"{A}:rocep1s0f1->{B}:rocep1s0f1", 108.5, "Gb/s"),
                ("nccl all_gather busbw", f"{A}->{B}", 183.7, "Gb/s"), ("matmul (median batch)", A, 0.05, "TFLOP/s (f32 on cpu)"),
                ("ttft median", f'{A} "quoted"', 0.25, "s"), ("NCCL torch loads", A, "2.28.9", "linked")]
    text = metrics.text("pair", measured, {"t1": "passed", "t2": "failed"}, 1700000000.5, passed=False)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    bw = families["gb10check_ib_write_bw_gbps"]
    assert bw.type == "gauge" and [(s.labels["node"], s.labels["link"], s.value) for s in bw.samples] == [
        (A, LINK, 109.0), (A, f"{A}:rocep1s0f1->{B}:rocep1s0f1", 108.5)]
    assert {s.labels["cluster"] for s in bw.samples} == {"pair"}
    assert families["gb10check_nccl_all_gather_busbw_gbps"].samples[0].labels["link"] == f"{A}->{B}"
    assert families["gb10check_matmul_median_batch_tflops"].samples[0].labels == {"cluster": "pair", "node": A, "link": "",
                                                                                   "where": A}
    assert families["gb10check_ttft_median_seconds"].samples[0].labels["where"] == f'{A} "quoted"'
    assert not any("nccl_torch_loads" in name for name in families)  # a version is no metric
    assert families["gb10check_run_passed"].samples[0].value == 0
    assert {s.labels["outcome"]: s.value for s in families["gb10check_checks"].samples} == {"failed": 1, "passed": 1}


def test_metrics_file_is_replaced_whole(tmp_path):
    target = tmp_path / "textfile" / "gb10check.prom"
    metrics.write(target, "a 1\n")
    metrics.write(target, "b 2\n")
    assert target.read_text() == "b 2\n" and [p.name for p in target.parent.iterdir()] == ["gb10check.prom"]


# ---- the store ----

def test_runs_read_back_with_versions_figures_and_findings(tmp_path):
    store = history.History.open(tmp_path / "h.sqlite")
    first = store.record(**run_args(0))
    second = store.record(**run_args(1, bw=41.3, green=False))
    assert [r.id for r in store.runs()] == [second, first]
    got = store.show(second)
    assert not got.green and got.counts == {"failed": 1} and got.stages == ["network"]
    assert got.figures == [("ib_write_bw", LINK, 41.3, "Gb/s"), ("NCCL torch loads", A, "2.28.9", "")]
    assert got.findings[0]["code"] == "rdma-bandwidth" and got.versions == {A: {"kernel": "6.17.0-1008-nvidia",
                                                                                "BIOS version": "5.36"}}
    assert store.last_green_versions("pair")[0] == first and store.last_green_versions("other") is None
    assert store.figure_runs("pair", "ib_write_bw", LINK, green_only=True, limit=5) == [(first, 109.0)]
    assert sqlite3.connect(tmp_path / "h.sqlite").execute("PRAGMA user_version").fetchone()[0] == history.SCHEMA
    with pytest.raises(history.HistoryError, match="no run 99"):
        store.show(99)


def test_against_names_the_version_change_and_the_drop(tmp_path):
    store = history.History.open(tmp_path / "h.sqlite")
    for n in range(3):
        store.record(**run_args(n))
    past = history.against(store, "pair", {A: {"kernel": "6.17.0-1014-nvidia", "BIOS version": "5.36"}},
                           [("ib_write_bw", LINK, 95.0, "Gb/s")], 0.10)
    assert [c.text for c in past.changes] == [f"{A}: kernel 6.17.0-1008-nvidia -> 6.17.0-1014-nvidia"]
    assert len(past.drops) == 1 and past.drops[0].changes == tuple(past.changes)
    assert past.trends == [("ib_write_bw", LINK, "Gb/s", [109.0, 109.0, 109.0, 95.0], 109.0)]
    # A network run reads no versions: the drop still names the change the last preflight recorded.
    store.record(**{**run_args(3, bw=109.0), "versions": {A: {"kernel": "6.17.0-1014-nvidia"}}, "outcomes": {"t": "failed"}})
    network = history.against(store, "pair", {}, [("ib_write_bw", LINK, 95.0, "Gb/s")], 0.10)
    assert network.changes == [] and network.last_green is None
    assert [c.text for c in network.drops[0].changes] == [f"{A}: kernel 6.17.0-1008-nvidia -> 6.17.0-1014-nvidia"]


def test_a_baseline_is_of_the_same_machines_never_another_cluster_of_the_same_name(tmp_path):
    from gb10check.cluster import parse_cluster
    from gb10check.sim import topology

    def sim(n: int, kind: str | None):
        nodes, cabling = topology.build(n, kind)
        return parse_cluster(topology.cluster_yaml(nodes, "/tmp/x", topology=cabling))

    pair, four = sim(2, None), sim(4, "switch")
    assert pair.name == four.name and pair.history_name != four.history_name
    assert pair.history_name == f"{pair.name}[{'+'.join(n.name for n in pair.by_rank())}]"
    store = history.History.open(tmp_path / "h.sqlite")
    for n in range(3):
        store.record(**{**run_args(n), "cluster": pair.history_name})
    # the four nodes' first run: no baseline, no last green run, no trend from the pair's runs
    past = history.against(store, four.history_name, {A: {"kernel": "other"}}, [("ib_write_bw", LINK, 50.0, "Gb/s")], 0.10)
    assert past.drops == [] and past.changes == [] and past.last_green is None
    assert [t[3] for t in past.trends] == [[50.0]]  # its own figure alone: the pair's three runs are not in it
    store.record(**{**run_args(3), "cluster": four.history_name})
    assert len(store.runs(pair.history_name)) == 3 and len(store.runs(four.history_name)) == 1
    assert len(store.runs(pair.name)) == 4  # the name alone lists every node set it had
    assert store.runs(pair.name[:-1]) == []  # a prefix of the name is another cluster


def test_the_default_file_and_off(monkeypatch, tmp_path):
    monkeypatch.delenv("GB10CHECK_HISTORY", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert history.chosen(None) == tmp_path / "gb10check" / "history.sqlite"
    assert history.chosen("off") is None and history.chosen(str(tmp_path / "x")) == tmp_path / "x"
    monkeypatch.setenv("GB10CHECK_HISTORY", "off")
    assert history.chosen(None) is None


def test_a_damaged_file_is_refused_in_one_line_and_left_as_it_was(tmp_path):
    path = tmp_path / "h.sqlite"
    path.write_bytes(b"this is no database\n" * 200)
    before = path.read_bytes()
    with pytest.raises(history.HistoryError) as exc:
        history.History.open(path)
    assert len(str(exc.value).splitlines()) == 1 and str(exc.value).startswith(f"history file {path}: ")
    assert "fix: move it aside" in str(exc.value)
    assert path.read_bytes() == before
    # A sound header over damaged pages: the check finds it.
    good = tmp_path / "g.sqlite"
    store = history.History.open(good)
    for n in range(30):
        store.record(**run_args(n))
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    data = bytearray(good.read_bytes())
    data[4096 * 2: 4096 * 3] = b"\xff" * 4096
    good.write_bytes(bytes(data))
    with pytest.raises(history.HistoryError, match="history file .*(damaged|not a gb10check history)"):
        history.History.open(good)
    assert good.read_bytes() == bytes(data)


def test_a_newer_schema_is_refused_and_never_written(tmp_path):
    path = tmp_path / "h.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE runs (future TEXT)")
    db.execute(f"PRAGMA user_version = {history.SCHEMA + 1}")
    db.commit()
    db.close()
    before = path.read_bytes()
    with pytest.raises(history.HistoryError, match=rf"schema {history.SCHEMA + 1} is newer than this gb10check's "
                                                   rf"{history.SCHEMA} .*fix: upgrade gb10check"):
        history.History.open(path)
    assert path.read_bytes() == before


def test_an_older_file_is_migrated(tmp_path):
    path = tmp_path / "h.sqlite"
    sqlite3.connect(path).close()  # an empty file at user_version 0
    store = history.History.open(path)
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == history.SCHEMA
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


WRITER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {repo!r})
    from gb10check import history
    from selftests.test_history import run_args
    store = history.History.open(sys.argv[1])
    if sys.argv[2] == "hang":  # stop inside the transaction, after the run's row and before its figures
        def hang(*args):
            print("inside", flush=True)
            time.sleep(120)
        history._figures = hang
        store.record(**run_args(99))
    for n in range(int(sys.argv[3])):
        store.record(**run_args(n, bw=100.0 + int(sys.argv[2])))
""")


def writer(tmp_path: Path, path: Path, mode: str, runs: int) -> subprocess.Popen:
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(repo=str(REPO)))
    return subprocess.Popen([sys.executable, str(script), str(path), mode, str(runs)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_two_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "h.sqlite"  # made by whichever comes first; the other waits, then finds the schema there
    procs = [writer(tmp_path, path, mode, 25) for mode in ("1", "2")]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    store = history.History.open(path)
    assert len(store.runs(limit=100)) == 50
    assert store.db.execute("SELECT count(*) FROM figures").fetchone()[0] == 100
    assert sorted({v for _, v in store.figure_runs("pair", "ib_write_bw", LINK, False, 100)}) == [101.0, 102.0]
    assert store.db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_a_writer_killed_inside_its_transaction_leaves_nothing_half_written(tmp_path):
    path = tmp_path / "h.sqlite"
    store = history.History.open(path)
    earlier = [store.record(**run_args(n)) for n in range(3)]
    store.close()
    proc = writer(tmp_path, path, "hang", 0)
    try:
        assert proc.stdout.readline().strip() == "inside", proc.stderr.read() if proc.poll() is not None else ""
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    store = history.History.open(path)
    assert [r.id for r in store.runs()] == list(reversed(earlier))
    assert store.db.execute("SELECT count(*) FROM outcomes").fetchone()[0] == 3
    assert store.db.execute("SELECT count(*) FROM versions").fetchone()[0] == 6
    assert store.db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    store.record(**run_args(5))  # and the next run writes as usual
    assert len(store.runs()) == 4


# ---- the command ----

def test_history_command_lists_and_shows(tmp_path, capsys):
    path = tmp_path / "h.sqlite"
    store = history.History.open(path)
    first = store.record(**run_args(0))
    store.record(**run_args(1, bw=41.3, green=False))
    store.close()
    assert main(["history", "--history", str(path)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 2 and listed[0].startswith("#2 ") and "FAILED" in listed[0] and "green" in listed[1]
    assert main(["history", "show", str(first), "--history", str(path)]) == 0
    shown = capsys.readouterr().out
    assert f"run #{first}: cluster pair" in shown and "109.00 Gb/s" in shown and f"{A}: kernel: 6.17.0-1008-nvidia" in shown
    assert main(["history", "show", "7", "--history", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (f"gb10check history: history file {path}: no run 7; "
                                               "fix: `gb10check history` lists the runs")


def test_a_bad_history_file_stops_the_suite_in_one_line(tmp_path):
    bad = tmp_path / "h.sqlite"
    bad.write_text("garbage " * 100)
    proc = run_pytest(["-p", "no:cacheprovider", "-m", "preflight", "-k", "no_such_check", "--cluster=cluster.example.yaml",
                       f"--history={bad}"], timeout=120)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    said = [l for l in (proc.stdout + proc.stderr).splitlines() if "history file" in l]
    assert said == [f"ERROR: history file {bad}: not a gb10check history (file is not a database); fix: move it aside (a new "
                    "one is made in its place), or choose another with --history PATH or GB10CHECK_HISTORY (`off`: record "
                    "nothing)"]
    assert bad.read_text() == "garbage " * 100


def test_the_report_leads_with_the_changes_and_draws_each_trend():
    from gb10check import report

    past = history.Against(last_green=4, last_green_at=1000.0, changes=[trends.Change(B, "kernel", "a", "b")],
                           trends=[("ib_write_bw", LINK, "Gb/s", [109.0, 108.0, 95.0], 108.5)])
    run = report.Run("pair", outcomes={"t::x": "failed"}, messages={"t::x": "boom"}, versions={B: {"kernel": "b"}}, past=past,
                     measured=[("ib_write_bw", LINK, 95.0, "Gb/s")])
    md = report.markdown(run)
    assert md.index("## Since the last green run (#4, ") < md.index("## Causes") and f"- {B}: kernel a -> b" in md
    assert f"| ib_write_bw | {LINK} | █▇▁ | 109 108 95 Gb/s | 108.5 |" in md
    page = report.page(run)
    assert page.index("Since the last green run (#4") < page.index("<h2>Causes") and "<polyline" in page
    assert report.data(run)["since_last_green"] == {"run": 4, "changes": [{"node": B, "what": "kernel", "before": "a",
                                                                            "after": "b"}]}
    assert "Since the last green" not in report.markdown(report.Run("pair", outcomes={"t::x": "passed"}))
