"""The fixtures the suite's own tests use, loaded by tests/conftest.py (so nowhere else).

- `cluster`: the validated definition (--cluster PATH, else $GB10CHECK_CLUSTER, else ./cluster.yaml).
- `cluster_file`: its path.
- `node`: one test per node, id = node name; `.host` is a testinfra host, `.run()` a bounded command.
- `follower`: one test per node but rank 0 (parity checks compare it with rank 0).
- `node_link`: one test per link of each node, id = "node:netdev".
- `link_pair`: one test per cable/link between two nodes, id = "a:netdev--b:netdev".
- `path`: one test per direction of each link, id = "a:netdev->b:netdev".
- `required_port`: one test per port the profile requires open.
- `node_pair`: one test per ordered pair of nodes (a reaches b), id = "a->b".
- `head`: rank 0. `api`: the served API (plain HTTP, bearer key from serving.api_key_env).
- `ray_cluster`: the cluster, for the Ray path's checks; they skip, saying so, when deploy.executor is mp.
- `measurements`: records figures (Gb/s, tok/s ...) that the run prints at its end and the report plots.
- `versions`: records a line of a node's versions manifest, kept in the run history (gb10check/history.py).
- `tables`: records a text table (the depth sweep's) that the run prints at its end and the report keeps.
Each hands out one of the plugin's private, parametrized values (gb10check/plugin.py says why).
"""

import pytest

from .plugin import MEASUREMENT, TABLE, VERSION


@pytest.fixture(scope="session")
def cluster(_gb10check_cluster):
    return _gb10check_cluster


@pytest.fixture(scope="session")
def cluster_file(_gb10check_cluster_file):
    return _gb10check_cluster_file


@pytest.fixture(scope="session")
def head(_gb10check_head):
    return _gb10check_head


@pytest.fixture
def node(_gb10check_node):
    return _gb10check_node


@pytest.fixture
def follower(_gb10check_follower):
    return _gb10check_follower


@pytest.fixture
def node_link(_gb10check_node_link):
    return _gb10check_node_link


@pytest.fixture
def link_pair(_gb10check_link_pair):
    return _gb10check_link_pair


@pytest.fixture
def path(_gb10check_path):
    return _gb10check_path


@pytest.fixture
def required_port(_gb10check_required_port):
    return _gb10check_required_port


@pytest.fixture
def node_pair(_gb10check_node_pair):
    return _gb10check_node_pair


@pytest.fixture(scope="session")
def api(cluster):
    """The served API (rank 0, or serving.base_url), with the key from serving.api_key_env when set."""
    from .serving import api_of

    return api_of(cluster)


@pytest.fixture(scope="session")
def ray_cluster(cluster):
    """The cluster when it deploys through Ray (deploy.executor: ray). With mp the Ray checks skip before they touch a
    node, with that reason: one line each in the report, never a failure, never NOT CHECKED."""
    if not cluster.uses_ray:
        pytest.skip("deploy.executor is mp: the Ray checks apply to deploy.executor: ray")
    return cluster


@pytest.fixture
def measurements(request: pytest.FixtureRequest):
    """record(what, where, value, unit): figures the checks measured, printed at the end of the run.

    Kept in the test's user_properties, so they reach the report (and the controller under xdist).
    """

    def record(what: str, where: str, value: float | str, unit: str) -> None:  # a text value (a version) is printed as is
        request.node.user_properties.append((MEASUREMENT, (what, where, value, unit)))

    return record


@pytest.fixture
def versions(request: pytest.FixtureRequest):
    """record(node, what, version): a line of the node's versions manifest (kernel, BIOS, driver, image ...), kept in the
    run history; each preflight compares it with the cluster's last green run (gb10check/history.py)."""

    def record(node: str, what: str, version: str | None) -> None:  # None: the node did not say; nothing recorded
        if version is not None and str(version).strip():
            request.node.user_properties.append((VERSION, (node, what, str(version).strip())))

    return record


@pytest.fixture
def tables(request: pytest.FixtureRequest):
    """record(title, text): a table the run prints at its end and the report keeps (the depth sweep's)."""

    def record(title: str, text: str) -> None:
        request.node.user_properties.append((TABLE, (title, text)))

    return record
