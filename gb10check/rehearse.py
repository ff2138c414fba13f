"""The whole life of a cluster, rehearsed on the simulated pair: one command, a short summary, the reports.

provision (once) -> sim up -> preflight + network, one full run of both stages (recording the stage status) -> gate
(with --no-slow the network run is partial: the gate is passed by a logged override that says so) -> deploy the
real two-node vLLM (TP=2, rank 0 first, rank 1 headless, watchdog on) -> serving -> sim down. Each suite runs as a user runs it (`python -m pytest ...`)
and writes its JUnit XML and report into the rehearsal's folder; the suite is the package's own (gb10check.suite), run
from the rehearsal's folder, so a wheel rehearses as a clone does.
"""

import subprocess
import sys
import time
from pathlib import Path

from . import stage, suite
from .cluster import load_cluster
from .deploy.run import ComposeLauncher, DeployFailed, deploy
from .sim import control, provision


def run_stage(cluster: Path, out: Path, name: str, marker: str) -> int:
    argv = [sys.executable, "-m", "pytest", *suite.pytest_argv(marker, str(cluster), [
        "-p", "no:cacheprovider", "-q", f"--report-dir={out / name}", f"--junitxml={out / name / 'junit.xml'}"])]
    print(f"== {name}: pytest -m \"{marker}\"", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    return subprocess.run(argv, cwd=out, timeout=1800).returncode  # a stage that hangs ends the rehearsal, named by its stage


def rehearse(out: Path, slow: bool = True) -> int:
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    stages: list[tuple[str, str, float]] = []
    start = time.monotonic()

    def done(name: str, verdict: str, t0: float) -> None:
        stages.append((name, verdict, time.monotonic() - t0))

    try:
        t0 = time.monotonic()
        provision.provision()
        done("provision", "ok", t0)
        t0 = time.monotonic()
        cluster = control.up(2)
        done("sim up", "ok", t0)
        t0 = time.monotonic()
        rc = run_stage(cluster, out, "preflight-network", "preflight or network" if slow else "(preflight or network) and not slow")
        done("preflight + network", "passed" if rc == 0 else f"FAILED (exit {rc})", t0)
        override = None if slow else "rehearse --no-slow: the network stage ran without its slow runs"
        if not stage.gate(cluster, max_age_s=3600, override=override, step="rehearse"):
            done("deploy", "refused by the gate", time.monotonic())
        else:
            t0 = time.monotonic()
            c = load_cluster(cluster)
            launcher = ComposeLauncher(c)
            try:
                deploy(c, launcher, stage.deployment_record_path(cluster), say=lambda m: print(m, flush=True),
                       stall_timeout_s=300)
                done("deploy (docker compose, TP=2: rank 0, then rank 1 headless; watchdog on)", "ok", t0)
            except DeployFailed as exc:
                done("deploy", f"FAILED: {str(exc).splitlines()[0][:60]}", t0)
                raise
            finally:
                launcher.close()
            t0 = time.monotonic()
            rc = run_stage(cluster, out, "serving", "serving")
            done("serving", "passed" if rc == 0 else f"FAILED (exit {rc})", t0)
    except Exception as exc:  # noqa: BLE001 - the summary names whatever stopped the rehearsal
        stages.append(("stopped", f"{type(exc).__name__}: {exc}", 0.0))
    finally:
        control.down(quiet=True)
    print("\n== rehearsal summary")
    for name, verdict, took in stages:
        print(f"  {name:<40} {verdict:<28} {took:7.1f} s")
    print(f"  {'total':<40} {'':<28} {time.monotonic() - start:7.1f} s")
    print(f"  reports: {out}/*/report.html (and report.md, junit.xml)")
    ok = all(v in ("ok", "passed") for _, v, _ in stages)
    return 0 if ok else 1
