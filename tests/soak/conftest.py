"""The soak stage's shared state: the API up (the serving stage's own fixtures: /health asked once, skip with the reason
when it is not up), the deployment's launcher (each rank's container and log, and the memory watchdog, over the run's
SSH connections) and the soak settings resolved against the deployment."""

import pytest

from gb10check import soak
from gb10check.deploy.run import ComposeLauncher
from gb10check.plugin import remote_node
from ..serving.conftest import api_state, pytest_pyfunc_call, served  # noqa: F401


@pytest.fixture(scope="session")
def launcher(cluster, pytestconfig):
    return ComposeLauncher(cluster, {n.name: remote_node(pytestconfig, n.name) for n in cluster.nodes})


@pytest.fixture(scope="session")
def soak_settings(cluster):
    return soak.settings(cluster)
