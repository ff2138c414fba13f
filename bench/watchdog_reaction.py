"""Watchdog reaction time on the simulated pair: a real memory hog in the follower crosses the
threshold while the real two-node vLLM loads; how long until every rank is stopped?

Reaction = (deploy raised, every rank stopped) - (an independent 0.1 s poller first saw MemAvailable
under the threshold), measured for today's default poll interval (deploy.watchdog.poll_interval_s, 0.5 s)
and the old default (2 s) in one run; the poll interval bounds it (issue 17: 1.96 s at 2 s, 0.87 s at 0.5 s).
Needs root and `gb10check sim provision`.

    python bench/watchdog_reaction.py
"""

import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gb10check.cluster import Watchdog, load_cluster  # noqa: E402
from gb10check.deploy.run import ComposeLauncher, DeployFailed, deploy, down  # noqa: E402
from gb10check.facts.meminfo import parse_meminfo  # noqa: E402
from gb10check.sim import control  # noqa: E402

OLD_DEFAULT_S = 2.0  # the poll interval before issue 17
HOG = "timeout 120 python3 -c 'import time; b = b\"x\" * (6 * 2**30); time.sleep(120)'"


def node_mem_available(node: str) -> float:
    return parse_meminfo(control.node_exec(node, "cat /proc/meminfo").stdout)["mem_available_gib"]


def once(poll_s: float) -> float:
    path = control.up(2, quiet=True)
    cluster = load_cluster(path)
    follower = cluster.by_rank()[1].name
    avail = node_mem_available(follower)
    wd = cluster.deploy.watchdog.model_copy(update={"min_mem_available": avail - 4.5, "poll_interval_s": poll_s})
    cluster = cluster.model_copy(update={"deploy": cluster.deploy.model_copy(update={"watchdog": wd})})
    launcher = ComposeLauncher(cluster)
    threading.Timer(15, lambda: control.node_exec(follower, HOG + " &", check=False)).start()
    crossed: list[float] = []

    def watch() -> None:
        while not crossed:  # from the host, not through the launcher's SSH connections
            if node_mem_available(follower) < wd.min_mem_available:
                crossed.append(time.time())
            time.sleep(0.1)

    threading.Thread(target=watch, daemon=True).start()
    try:
        deploy(cluster, launcher, path.parent / "bench-deployment.json", say=lambda m: None, stall_timeout_s=300)
        raise SystemExit("the watchdog never fired")
    except DeployFailed as exc:
        stopped = time.time()
        if "watchdog" not in str(exc):
            raise SystemExit(f"the deploy failed for another reason: {exc}")
    down(launcher, [n.name for n in cluster.by_rank()], say=lambda m: None)
    launcher.close()
    control.down(quiet=True)
    return stopped - crossed[0]


def main() -> int:
    default = Watchdog().poll_interval_s
    rows = [("default", default, once(default)), ("old default", OLD_DEFAULT_S, once(OLD_DEFAULT_S))]
    print("              poll interval   reaction (MemAvailable under the threshold -> every rank stopped)")
    for name, poll, reaction in rows:
        print(f"{name:<12} {poll:>8.1f} s     {reaction:6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
