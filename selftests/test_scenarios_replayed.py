"""The fault scenarios that prove only checks reading facts, judged from their recordings of the live simulated pair
(selftests/captures/facts/scenarios/NAME.json.gz, written by `gb10check sim record-scenarios`): the suite runs as a user
runs it, with `--facts-from`, no root, no node reached, and must give what the live scenario gave, asserted by the live
tier's own judges (test_checks_on_sim.py's tables). Which scenarios replay is computed (gb10check/sim/recordings.py);
the ones left (a live network or process: ports, SSH mesh, ib_write_bw, NCCL, serving, a running Ray) stay live.

A recording is stale when what produced it changed (registry, commands, programs, stand-ins, the scenario, its
selection): the test fails with the command that records it again."""

import re

import pytest
import yaml

from gb10check.gather import recording
from gb10check.sim import recordings

from .simbed import SuiteRun, run_suite
from .test_checks_on_sim import EXPECTED, LIVE, WARNINGS, judge_exactly, judge_link_speed_warning, \
    judge_page_cache_warning, judge_warnings
from .test_ray_on_sim import EXPECTED as RAY_EXPECTED
from .test_ray_on_sim import LIVE_RAY, judge_ray_exactly

REPLAYED = recordings.names()


def recorded(name: str) -> dict:
    path = recordings.path_of(name)
    if not path.exists():
        pytest.fail(f"scenario {name} has no recording at {path}: record it (root, a few minutes) with "
                    f"`{recordings.record_command(name)}`", pytrace=False)
    return recording.read(path)


def replay(name: str, tmp_path) -> SuiteRun:
    """The scenario's checks judged from its recording, through pytest and the plugin, on the recording's cluster file."""
    got = recorded(name)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(got["cluster"], sort_keys=False))
    return run_suite(cluster, f"--facts-from={recordings.path_of(name)}", *recordings.selection(name))


@pytest.mark.parametrize("name", [n for n in REPLAYED if n in EXPECTED])
def test_recorded_scenario_fails_exactly_its_checks(name, tmp_path):
    run = replay(name, tmp_path)
    judge_exactly(name, run)
    if name == "link-speed-100g":
        judge_link_speed_warning(run)
    if name == "page-cache":
        judge_page_cache_warning(run)


@pytest.mark.parametrize("name", [n for n in REPLAYED if n in WARNINGS])
def test_recorded_warning_scenarios(name, tmp_path):
    judge_warnings(name, replay(name, tmp_path))


@pytest.mark.parametrize("name", [n for n in REPLAYED if n in RAY_EXPECTED])
def test_recorded_ray_scenario_fails_exactly_its_checks(name, tmp_path):
    judge_ray_exactly(name, replay(name, tmp_path).results)


@pytest.mark.parametrize("name", REPLAYED)
def test_recording_is_current(name):
    got = recorded(name)
    assert got.get("produced_by") == recordings.produced_by(name), (
        f"the recording of {name} is stale (made by {got.get('produced_by')}, today's {recordings.produced_by(name)}: the "
        f"registry, the commands, the programs, the stand-ins, the scenario or its selection changed): record it again with "
        f"`{recordings.record_command(name)}` (root, GB10CHECK_SIM_INSTANCE=N where others share the machine; about 7 s a "
        f"scenario on a quiet machine; all of them: `{recordings.record_command()}`)")
    assert got.get("scenario") == name and got.get("selection") == recordings.selection(name)


def test_every_recording_is_of_a_replayed_scenario():
    on_disk = {p.name[:-len(".json.gz")] for p in recordings.FOLDER.glob("*.json.gz")}
    assert on_disk <= set(REPLAYED), f"recordings of scenarios that run live: {sorted(on_disk - set(REPLAYED))}"


def test_no_proof_dropped():
    """Every scenario the tables prove is proven once: live, or from its recording."""
    assert set(EXPECTED) | set(WARNINGS) | set(RAY_EXPECTED) == set(REPLAYED) | set(LIVE) | set(LIVE_RAY)
    assert not set(REPLAYED) & (set(LIVE) | set(LIVE_RAY))
    assert "healthy" in LIVE
    assert set(WARNINGS) <= set(REPLAYED), "a warning scenario left live has no live test (test_checks_on_sim.py): add one"


def test_a_recording_judges_only_what_it_holds(tmp_path):
    """A fact, a probe or a program absent from a recording is NOT CHECKED (not-recorded), never a pass; the run reaches
    no node and records no stage."""
    name = "netplan-644"
    got = recorded(name)
    head = got["cluster"]["nodes"][0]["name"]
    got["facts"][head] = [o for o in got["facts"][head] if o["fact"] != "netplan_mode"]
    got["once"] = {}
    broken = recording.write(got, tmp_path / "recording.json.gz")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(got["cluster"], sort_keys=False))
    run = run_suite(cluster, f"--facts-from={broken}", "-m", "preflight or network", "-k",
                    "test_netplan_file or test_ping or test_shard_read_rate")
    outcomes = {k.split("::")[1]: v for k, v in run.results.items()}
    netplan = outcomes[f"test_netplan_file[{head}]"]
    assert netplan.outcome == "not checked" and "[not-recorded]" in netplan.message, netplan
    assert "netplan file's mode" in netplan.message or "netplan_mode" in netplan.message, netplan.message
    for test_id, outcome in outcomes.items():
        if test_id.startswith(("test_ping", "test_shard_read_rate")):  # probes and programs: absent here
            assert outcome.outcome == "not checked" and "[not-recorded]" in outcome.message, (test_id, outcome)
    assert "no stage recorded" in run.stdout
    assert not (tmp_path / ".gb10check-status.json").exists()



def test_the_h200_recording_judged_through_the_plugin(tmp_path):
    """A real machine's recording (the borrowed H200, `gb10check record`: facts only) judged as a user judges one: each
    check that reads facts gives the machine's verdict (test_facts_property's table); the rest, which need probes,
    programs or a live command, are not checked with not-recorded, never passed."""
    from .test_facts_property import H200, H200_VERDICTS

    got = recording.read(H200)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(got["cluster"], sort_keys=False))
    run = run_suite(cluster, f"--facts-from={H200}", "-m", "preflight or network")
    seen: dict[str, set[str]] = {}
    for test_id, outcome in run.results.items():
        name = test_id.split("::")[1].split("[")[0]
        seen.setdefault(name, set()).add(outcome.outcome)
        if name in NOT_RECORDED_ON_THE_H200:  # a program or a live command: the recording has none
            assert outcome.outcome == "not checked" and "[not-recorded]" in outcome.message, (test_id, outcome)
    expected = {name: {"passed" if verdict == "warning" else verdict} for name, verdict in H200_VERDICTS.items()}
    expected |= {name: {"not checked"} for name in NOT_RECORDED_ON_THE_H200} | {"test_compose_lint": {"failed"}}
    # nccl-tests runs each rank with its node's compose environment: the H200 has no compose file (prerequisite-failed)
    expected |= {"test_nccl_all_gather": {"not checked"}}
    # the rest need a second node or the Ray path: skipped with the reason
    assert {name: outcomes for name, outcomes in seen.items() if outcomes != {"skipped"}} == expected
    assert "[compose-missing] h200: saw no ~/vllm/compose.yml" in run.results[
        "tests/preflight/test_compose.py::test_compose_lint[h200]"].message  # judged from the facts, before its dry run


# The start memory gate's facts (the memory probe, nvidia-smi's compute processes) came after the H200 recording: its
# checks are not-recorded there until the H200 run is recorded again (selftests/device/run_local_h200.sh).
NOT_RECORDED_ON_THE_H200 = {"test_gpu_compute", "test_shard_read_rate", "test_clock_skew",
                            "test_start_memory", "test_no_gpu_process_left"}


def test_a_run_recorded_under_xdist_is_judged_the_same_from_its_recording(tmp_path):
    """`--record DIR` under pytest-xdist (a file per worker, merged on reading) on a one-node cluster that is this machine
    (no root): judged again with `--facts-from DIR`, every check gives the outcome and the codes it gave live, except the
    clock, which is read live, and is then not-recorded."""
    from .test_local_connection import local_cluster

    cluster = local_cluster(tmp_path)
    folder = tmp_path / "recorded"
    live = run_suite(cluster, f"--record={folder}", "-m", "preflight", "-n", "2")
    assert sorted(p.name for p in folder.iterdir()) == ["recording-gw0.json.gz", "recording-gw1.json.gz"]
    again = run_suite(cluster, f"--facts-from={folder}", "-m", "preflight")
    assert set(again.results) == set(live.results)
    codes = lambda o: (o.outcome, sorted(set(re.findall(r"\[([a-z0-9-]+)\] ", o.message))))  # noqa: E731
    clock = [t for t in live.results if "test_clock_skew" in t]
    assert clock and all(again.results[t].outcome == "not checked" and "[not-recorded]" in again.results[t].message for t in clock)
    assert {t: codes(o) for t, o in again.results.items() if t not in clock} == \
        {t: codes(o) for t, o in live.results.items() if t not in clock}
    assert any(o.outcome == "passed" for o in again.results.values())  # it judged, from the recording
