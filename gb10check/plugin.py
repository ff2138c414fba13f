"""The pytest side: the cluster file becomes fixtures over the nodes.

- `cluster`: the validated definition (--cluster PATH, else $GB10CHECK_CLUSTER, else ./cluster.yaml).
- `node`: one test per node, id = node name; `.host` is a testinfra host, `.run()` a bounded command.
- `link_pair`: one test per cable/link between two nodes, id = "a:netdev--b:netdev".
- `node_pair`: one test per ordered pair of nodes (a reaches b), id = "a->b".
- `head`: rank 0. `api`: an openai client bound to the served model's base URL.
A node that cannot be reached fails its own tests with one line; the others run.
"""

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from .cluster import Cluster, ClusterError, Link, load_cluster
from .remote import RemoteError, RemoteNode

HINT = ("no cluster file: pass --cluster PATH, set GB10CHECK_CLUSTER, or copy cluster.example.yaml to cluster.yaml "
        "and edit it (or run `gb10check sim up` and use the file it writes)")

CLUSTER_KEY = pytest.StashKey[Cluster]()
NODES_KEY = pytest.StashKey[dict[str, RemoteNode]]()
PATH_KEY = pytest.StashKey[Path]()
USAGE_KEY = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gb10check")
    group.addoption("--cluster", metavar="PATH", help="cluster definition (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")


def cluster_path(config: pytest.Config) -> Path | None:
    given = config.getoption("--cluster") or os.environ.get("GB10CHECK_CLUSTER")
    if given:
        return Path(given)
    default = Path("cluster.yaml")
    return default if default.exists() else None


def pytest_configure(config: pytest.Config) -> None:
    # An explicitly named file is validated before anything runs: a bad file stops here, in one line.
    if config.getoption("--cluster") or os.environ.get("GB10CHECK_CLUSTER"):
        get_cluster(config)


def get_cluster(config: pytest.Config) -> Cluster:
    """The cluster, loaded once; a missing or bad file is a usage error (exit 4) in one line."""
    if CLUSTER_KEY not in config.stash:
        path = cluster_path(config)
        if path is None:
            raise pytest.UsageError(HINT)
        try:
            config.stash[CLUSTER_KEY] = load_cluster(path)
        except ClusterError as exc:
            raise pytest.UsageError(f"invalid cluster file: {exc}") from None
        config.stash[PATH_KEY] = path
        config.stash[NODES_KEY] = {}
    return config.stash[CLUSTER_KEY]


def remote_node(config: pytest.Config, name: str) -> RemoteNode:
    cluster = get_cluster(config)
    nodes = config.stash[NODES_KEY]
    if name not in nodes:
        nodes[name] = RemoteNode(cluster.node(name), cluster.ssh)
    return nodes[name]


@dataclass(frozen=True)
class LinkUnderTest:
    """Both ends of one link: a (lower rank) and b."""

    a: RemoteNode
    a_link: Link
    b: RemoteNode
    b_link: Link

    def __repr__(self) -> str:
        return f"<link {self.a.name}:{self.a_link.netdev} {self.a_link.address} -- {self.b.name}:{self.b_link.netdev} {self.b_link.address}>"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    wanted = {"node", "link_pair", "node_pair"} & set(metafunc.fixturenames)
    if not wanted:
        return
    config = metafunc.config
    try:
        cluster = get_cluster(config)
    except pytest.UsageError as exc:
        # Raised here it would read as a collection traceback; report it once, after collection.
        config.stash[USAGE_KEY] = str(exc)
        for name in wanted:
            metafunc.parametrize(name, [])
        return
    if "node" in wanted:
        names = [n.name for n in sorted(cluster.nodes, key=lambda n: n.rank)]
        metafunc.parametrize("node", [remote_node(config, n) for n in names], ids=names)
    if "link_pair" in wanted:
        pairs = cluster.link_pairs()
        metafunc.parametrize(
            "link_pair",
            [LinkUnderTest(remote_node(config, p.a.name), p.a_link, remote_node(config, p.b.name), p.b_link) for p in pairs],
            ids=[p.id for p in pairs],
        )
    if "node_pair" in wanted:
        pairs = [(a, b) for a in cluster.nodes for b in cluster.nodes if a.name != b.name]
        metafunc.parametrize(
            "node_pair",
            [(remote_node(config, a.name), remote_node(config, b.name)) for a, b in pairs],
            ids=[f"{a.name}->{b.name}" for a, b in pairs],
        )


def pytest_collection_finish(session: pytest.Session) -> None:
    if USAGE_KEY in session.config.stash:
        raise pytest.UsageError(session.config.stash[USAGE_KEY])


@pytest.fixture(scope="session")
def cluster(pytestconfig: pytest.Config) -> Cluster:
    return get_cluster(pytestconfig)


@pytest.fixture(scope="session")
def cluster_file(pytestconfig: pytest.Config, cluster: Cluster) -> Path:
    return pytestconfig.stash[PATH_KEY]


@pytest.fixture(scope="session")
def head(pytestconfig: pytest.Config, cluster: Cluster) -> RemoteNode:
    return remote_node(pytestconfig, cluster.head.name)


@pytest.fixture(scope="session")
def api(cluster: Cluster):
    """An OpenAI client for the served model. Retries off, so a failure is seen, not hidden."""
    import openai

    key_env = cluster.serving.api_key_env
    return openai.OpenAI(base_url=cluster.base_url, api_key=(os.environ.get(key_env) if key_env else None) or "EMPTY",
                         max_retries=0, timeout=120)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    # An unreachable node or a command that timed out is one readable line, not a paramiko traceback.
    try:
        return (yield)
    except RemoteError as exc:
        pytest.fail(str(exc), pytrace=False)


def pytest_unconfigure(config: pytest.Config) -> None:
    for node in config.stash.get(NODES_KEY, {}).values():
        node.close()
