"""What the engine runs: the configuration and kernels it resolved (rank 0's log, /metrics) against the cluster file's
serving.expect_engine, the deployment and the profile's fallback kernels; variables vLLM ignored, by name."""

import pytest

from gb10check.checks import serving
from gb10check.gather import commands, read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.serving


@reads("server_log")
def test_engine_config(served, head, cluster):
    log = read(head, "server_log")
    info = serving.metrics_info(served.get("/metrics", root=True))
    print(serving.engine_summary(log, info))
    report(serving.judge_engine(f"{head.name} rank 0 log", log, info, cluster.serving.expect_engine, cluster.deploy,
                                cluster.expect.engine_fallbacks, cluster.expect.profile, commands.server_log(cluster)))
