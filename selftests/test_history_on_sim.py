"""The run history on the simulated pair, as a user meets it over four short runs into one history file: a preflight
(`test_advisories` and `test_image`, which record the versions) and a network run (`test_ib_write_bw`) on the healthy
pair; then rank 1's BIOS version changes and its image is replaced under the same tag (a new image id, as an unattended
pull leaves it), and the next preflight prints both changes first, in its terminal summary and its report; then
one of rank 1's links is held to 95 Gb/s (above the floor of 90: the run passes), and the next network run warns that
the link's figure is 13% under its baseline, naming the BIOS change that came between. Its --metrics-file parses with
Prometheus' own parser."""

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gb10check import history
from gb10check.cluster import load_cluster
from gb10check.sim import control, scenarios

from .simbed import require_sim, run_suite

pytestmark = pytest.mark.sim

A, B = "thinkstationpgx-30", "thinkstationpgx-32"
SLOW_LINK = "enP2p1s0f0np0"
VERSIONS = "test_advisories or (test_image and not same_as_head and not nccl and not kernels)"


def test_a_version_change_comes_first_and_a_lowered_figure_warns(tmp_path):
    require_sim()
    path = control.up(2, quiet=True)
    store = tmp_path / "history.sqlite"

    def run(*args):
        return run_suite(path, f"--history={store}", *args)

    def passed(result):
        return {v.outcome for v in result.results.values()} <= {"passed"} and result.results

    first = run("-m", "preflight", "-k", VERSIONS)
    assert passed(first), first.stdout[-3000:]
    assert "since the last green run" not in first.stdout  # nothing to compare with yet
    base = run("-m", "network", "-k", "test_ib_write_bw")
    assert passed(base) and "below-baseline" not in base.stdout, base.stdout[-3000:]

    old = control.node_exec(B, "cat /sys/class/dmi/id/bios_version").stdout.strip()
    scenarios.change_state(B, {"bios_version": "5.36_0ACUM099"})
    image = load_cluster(path).deploy.image
    old_id = control.node_exec(B, f"docker image inspect -f '{{{{.Id}}}}' {image}").stdout.strip()
    control.node_exec(B, f"docker create --name gb10-history-probe {image} true >/dev/null && "
                         f"docker commit gb10-history-probe {image} >/dev/null && docker rm gb10-history-probe >/dev/null")
    new_id = control.node_exec(B, f"docker image inspect -f '{{{{.Id}}}}' {image}").stdout.strip()
    assert old_id.startswith("sha256:") and new_id.startswith("sha256:") and new_id != old_id
    report = tmp_path / "report"
    try:
        second = run("-m", "preflight", "-k", VERSIONS, f"--report-dir={report}")
    finally:
        control.node_exec(B, f"docker tag {old_id} {image} && docker rmi {new_id} >/dev/null")
    assert passed(second), second.stdout[-3000:]
    ours = [line for line in second.stdout.splitlines() if line.strip("= ").startswith("gb10check")]
    assert ours[0].strip("= ").startswith("gb10check: since the last green run (#1, "), ours  # first of gb10check's lines
    assert ours[0].rstrip("= ").endswith("2 versions changed"), ours
    for change in (f"{B}: BIOS version {old} -> 5.36_0ACUM099", f"{B}: image {image} {old_id} -> {new_id}"):
        assert change in second.stdout, (change, second.stdout[-3000:])
    md = (report / "report.md").read_text()
    assert md.index("## Since the last green run (#1") < md.index("## Causes"), md[:1500]
    assert f"- {B}: BIOS version {old} -> 5.36_0ACUM099" in md and f"- {B}: image {image} {old_id} -> {new_id}" in md

    scenarios.change_state(B, scenarios._links(**{SLOW_LINK: {"bandwidth_gbps": 95.0}}))
    metrics = tmp_path / "textfile" / "gb10check.prom"
    third = run("-m", "network", "-k", "test_ib_write_bw", f"--metrics-file={metrics}")
    assert passed(third), third.stdout[-3000:]  # above the floor: the checks pass; the baseline warns
    warned = [line for line in third.stdout.splitlines() if line.startswith("[below-baseline]")]
    assert len(warned) == 1, third.stdout[-3000:]
    assert (f"saw ib_write_bw 95.00 Gb/s, 13% under its baseline 109.00 (the median of the last 1 passing run); expected "
            f"within 10% (the profile's max_drop_from_baseline); changed since: {B}: " in warned[0]), warned
    assert f"{B}: BIOS version {old} -> 5.36_0ACUM099" in warned[0] and f"{B}: image {image} {old_id} -> {new_id}" in warned[0]

    families = {f.name: f for f in text_string_to_metric_families(metrics.read_text())}
    links = {s.labels["link"]: s.value for s in families["gb10check_ib_write_bw_gbps"].samples}
    assert sorted(links.values()) == [95.0, 109.0] and all(s.labels["cluster"] and s.labels["node"] == A
                                                           for s in families["gb10check_ib_write_bw_gbps"].samples)
    slow = next(link for link, value in links.items() if value == 95.0)
    assert warned[0].startswith(f"[below-baseline] {slow}: "), (warned, links)  # the link the run measured it on

    got = history.History.open(store)
    runs = got.runs()
    assert [r.stages for r in runs] == [["network"], ["preflight"], ["network"], ["preflight"]]
    assert got.show(runs[1].id).versions[B]["BIOS version"] == "5.36_0ACUM099"
