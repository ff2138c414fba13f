"""The rank-ordered deployment and its watcher against a real two-node vLLM (TP=2 over the simulated
enp1s0f0np0, rank 1 --headless), started with `docker compose up -d` from each node's own compose file
by each node's own dockerd: it comes up, and each failure the field report met by hand is stopped and
named instead of hanging. (The healthy deployment and `down` are proven in test_pair_on_sim.py, on the deployment
the soak runs on.)"""

import threading
import time

import pytest

from gb10check.cluster import load_cluster
from gb10check.deploy.run import ComposeLauncher, DeployFailed, deploy, down
from gb10check.sim import control, scenarios

from .simbed import require_provisioned_sim

pytestmark = [pytest.mark.sim, pytest.mark.vllm]  # a real vLLM: one at a time (selftests/conftest.py)
A, B = "thinkstationpgx-30", "thinkstationpgx-32"


@pytest.fixture
def bed():
    require_provisioned_sim()
    path = control.up(2, quiet=True)
    launcher = None

    def make(cluster=None):
        nonlocal launcher
        cluster = cluster or load_cluster(path)
        if launcher:
            launcher.close()
        launcher = ComposeLauncher(cluster)
        return cluster, launcher

    yield path, make
    if launcher:
        down(launcher, [A, B], say=lambda m: None)
        launcher.close()
    control.down(quiet=True)


def test_container_exiting_during_load_fails_fast_with_the_cause(bed):
    path, make = bed
    scenarios.apply("shard-truncated")
    cluster, launcher = make()
    with pytest.raises(DeployFailed) as err:
        deploy(cluster, launcher, path.parent / "deployment.json", say=lambda m: None, stall_timeout_s=240)
    text = str(err.value)
    assert f"{B} (rank 1) exited with code 1 during startup" in text
    assert "cause: a checkpoint file on this node is damaged or cut short" in text and "file not fully covered" in text
    assert f"{A}: stopped" in text and launcher.exit_code(A) is not None


def test_follower_without_headless_fails_fast_names_the_cause_and_stops_rank0(bed):
    path, make = bed
    scenarios.apply("no-headless")
    cluster, launcher = make()
    # 240 s: what rank 0 would wait alone; the deploy stops on rank 1's exit instead (within one full check: proven on
    # the watch's clock in test_watches_on_their_clock)
    with pytest.raises(DeployFailed) as err:
        deploy(cluster, launcher, path.parent / "deployment.json", say=lambda m: None, stall_timeout_s=240)
    text = str(err.value)
    assert f"{B} (rank 1) exited with code" in text and "startup stalled" not in text
    assert "cause: rank 1+ started without --headless" in text and "collective_rpc should not be called on follower node" in text
    assert launcher.exit_code(A) is not None, "rank 0 hangs forever on its own: the deploy must stop it"


def test_dropped_rendezvous_stalls_and_is_named(bed):
    path, make = bed
    scenarios.apply("ufw-no-qsfp-rules")  # ufw on rank 1 drops what comes in over the QSFP subnets
    cluster = load_cluster(path)
    # Rank 0 waits for its peer inside the weights phase: its budget bounds it (15 s: a 135M model's weights load in
    # under a second here, 0.12 s measured; the phases before it keep their budgets and the 45 s stall limit).
    budgets = {**cluster.expect.startup_phase_budgets_s, "weights": 15}
    cluster = cluster.model_copy(update={"expect": cluster.expect.model_copy(update={"startup_phase_budgets_s": budgets})})
    cluster, launcher = make(cluster)
    with pytest.raises(DeployFailed) as err:
        deploy(cluster, launcher, path.parent / "deployment.json", say=lambda m: None, stall_timeout_s=45)
    text = str(err.value)
    assert "startup stalled" in text
    assert ("a firewall dropping the master port 29501 on a follower" in text
            or "a firewall dropping the master port or the NCCL ports between the nodes" in text), text
    assert launcher.exit_code(A) is not None and launcher.exit_code(B) is not None


def test_memory_watchdog_stops_every_rank(bed):
    path, make = bed
    cluster, launcher = make()
    avail = launcher.mem_available_gib(B)
    # A real hog in the follower: 6 GiB written, so it is resident. The threshold sits 4.5 GiB under what
    # the node has now: above what its loading rank takes (about 2.5 GiB), under what the hog adds
    # (a GB10's 5 GiB would need a 110 GiB hog).
    wd = cluster.deploy.watchdog.model_copy(update={"min_mem_available": avail - 4.5, "poll_interval_s": 0.5})
    cluster = cluster.model_copy(update={"deploy": cluster.deploy.model_copy(update={"watchdog": wd})})
    cluster, launcher = make(cluster)

    def hog():
        time.sleep(15)
        control.node_exec(B, "timeout 120 python3 -c 'b = b\"x\" * (6 * 2**30); import time; time.sleep(120)' &", check=False)

    threading.Thread(target=hog, daemon=True).start()
    with pytest.raises(DeployFailed) as err:
        deploy(cluster, launcher, path.parent / "deployment.json", say=lambda m: None, stall_timeout_s=240)
    text = str(err.value)
    assert f"watchdog: {B} MemAvailable" in text and "stopped every rank" in text
    assert launcher.exit_code(A) is not None and launcher.exit_code(B) is not None
    control.node_exec(B, "pkill -f 'b = b' || true", check=False)
    assert f"{A}: killed" in text and f"{B}: killed" in text


def test_follower_that_cannot_start_stops_rank0_too(bed):
    path, make = bed
    scenarios.apply("image-missing")  # rank 1 never got the image; `compose up --pull never` refuses at once
    cluster, launcher = make()
    with pytest.raises(DeployFailed) as err:
        deploy(cluster, launcher, path.parent / "deployment.json", say=lambda m: None, stall_timeout_s=240)
    text = str(err.value)
    assert f"{B}: `docker compose up -d` exited" in text and "gb10sim/vllm-cpu:local" in text and "startup stalled" not in text
    assert f"{A}: stopped" in text and launcher.exit_code(A) is not None, "rank 0 must not stay up alone"
