"""The pytest side: the cluster file becomes fixtures over the nodes.

- `cluster`: the validated definition (--cluster PATH, else $GB10CHECK_CLUSTER, else ./cluster.yaml).
- `node`: one test per node, id = node name; `.host` is a testinfra host, `.run()` a bounded command.
- `link_pair`: one test per cable/link between two nodes, id = "a:netdev--b:netdev".
- `follower`: one test per node but rank 0 (parity checks compare it with rank 0).
- `node_link`: one test per link of each node, id = "node:netdev".
- `path`: one test per direction of each link, id = "a:netdev->b:netdev".
- `node_pair`: one test per ordered pair of nodes (a reaches b), id = "a->b".
- `measurements`: records figures (Gb/s, tok/s ...) that the run prints at its end.
- `head`: rank 0. `api`: the served API (plain HTTP, bearer key from serving.api_key_env).
--report-dir=DIR writes report.md and report.html from what the checks recorded; a passed
preflight+network run records the stage status that `gb10check gate` reads before a deployment.
A node that cannot be reached fails its own tests with one line; the others run.
"""

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from .cluster import Cluster, ClusterError, Link, load_cluster
from .remote import RemoteError, RemoteNode
from .report import Run, skip_reason, write
from .stage import record_stage
from .verdict import Degraded

HINT = ("no cluster file: pass --cluster PATH, set GB10CHECK_CLUSTER, or copy cluster.example.yaml to cluster.yaml "
        "and edit it (or run `gb10check sim up` and use the file it writes)")

CLUSTER_KEY = pytest.StashKey[Cluster]()
NODES_KEY = pytest.StashKey[dict[str, RemoteNode]]()
PATH_KEY = pytest.StashKey[Path]()
USAGE_KEY = pytest.StashKey[str]()
REPORT_KEY = pytest.StashKey[tuple]()
STAGE_KEY = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gb10check")
    group.addoption("--cluster", metavar="PATH", help="cluster definition (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    group.addoption("--report-dir", metavar="DIR", help="write report.md and report.html (self-contained) there")


def cluster_path(config: pytest.Config) -> Path | None:
    given = config.getoption("--cluster") or os.environ.get("GB10CHECK_CLUSTER")
    if given:
        return Path(given)
    default = Path("cluster.yaml")
    return default if default.exists() else None


def pytest_configure(config: pytest.Config) -> None:
    given = config.getoption("--cluster")
    if given and config.inipath is None and given in config.invocation_params.args:
        # pytest picks its root before plugins add options, so it took PATH for a test path.
        raise pytest.UsageError(f"write --cluster={given} (with '='): with a space, pytest takes the path for a test path, "
                                f"picks {config.rootpath} as its root and misses gb10check's pytest.ini")
    # An explicitly named file is validated before anything runs: a bad file stops here, in one line.
    if given or os.environ.get("GB10CHECK_CLUSTER"):
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


@dataclass(frozen=True)
class LinkPath:
    """One direction of one link: traffic from src (its src_link) to dst (its dst_link address)."""

    src: RemoteNode
    src_link: Link
    dst: RemoteNode
    dst_link: Link


def _params(config: pytest.Config, cluster: Cluster, name: str) -> tuple[list, list[str]]:
    node = lambda spec: remote_node(config, spec.name)  # noqa: E731
    by_rank = sorted(cluster.nodes, key=lambda n: n.rank)
    if name == "node":
        return [node(n) for n in by_rank], [n.name for n in by_rank]
    if name == "follower":  # every node but rank 0, compared with rank 0
        return [node(n) for n in by_rank[1:]], [n.name for n in by_rank[1:]]
    if name == "node_link":
        pairs = [(n, l) for n in by_rank for l in n.links]
        return [(node(n), l) for n, l in pairs], [f"{n.name}:{l.netdev}" for n, l in pairs]
    if name == "link_pair":
        pairs = cluster.link_pairs()
        return [LinkUnderTest(node(p.a), p.a_link, node(p.b), p.b_link) for p in pairs], [p.id for p in pairs]
    if name == "path":
        paths = [d for p in cluster.link_pairs() for d in ((p.a, p.a_link, p.b, p.b_link), (p.b, p.b_link, p.a, p.a_link))]
        return ([LinkPath(node(a), la, node(b), lb) for a, la, b, lb in paths],
                [f"{a.name}:{la.netdev}->{b.name}:{lb.netdev}" for a, la, b, lb in paths])
    if name == "required_port":
        ports = cluster.expect.reachable_ports
        return ports, [f"port{p}" for p in ports]
    if name == "node_pair":
        pairs = [(a, b) for a in by_rank for b in by_rank if a.name != b.name]
        return [(node(a), node(b)) for a, b in pairs], [f"{a.name}->{b.name}" for a, b in pairs]
    raise KeyError(name)


PARAMETRIZED = ("node", "follower", "node_link", "link_pair", "path", "required_port", "node_pair")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    wanted = [name for name in PARAMETRIZED if name in metafunc.fixturenames]
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
    for name in wanted:
        values, ids = _params(config, cluster, name)
        metafunc.parametrize(name, values, ids=ids)


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
    """The served API (rank 0, or serving.base_url), with the key from serving.api_key_env when set."""
    from .serving import Api

    key_env = cluster.serving.api_key_env
    return Api(cluster.base_url, api_key=os.environ.get(key_env) if key_env else None)


MEASURE_KEY = pytest.StashKey[list]()


@pytest.fixture
def measurements(request: pytest.FixtureRequest):
    """record(what, where, value, unit): figures the checks measured, printed at the end of the run.

    Kept in the test's user_properties, so they reach the report (and the controller under xdist).
    """

    def record(what: str, where: str, value: float, unit: str) -> None:
        request.node.user_properties.append(("gb10check_measurement", (what, where, value, unit)))

    return record


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        for key, value in report.user_properties:
            if key == "gb10check_measurement":
                measured.append(tuple(value))
    # One outcome per test, for the report and the stage status: a failed setup or teardown is an error.
    if report.when == "call" or (report.when == "setup" and not report.passed) or (report.when == "teardown" and report.failed):
        outcome = "error" if report.failed and report.when != "call" else report.outcome
        if outcomes.get(report.nodeid) in ("failed", "error"):
            return
        outcomes[report.nodeid] = outcome
        if report.skipped:
            messages[report.nodeid] = skip_reason(report.longrepr)
        elif report.failed:
            messages[report.nodeid] = report.longreprtext


def pytest_warning_recorded(warning_message, when, nodeid, location) -> None:
    if issubclass(warning_message.category, Degraded):
        degraded.append(str(warning_message.message))


measured: list[tuple] = []
outcomes: dict[str, str] = {}
messages: dict[str, str] = {}
degraded: list[str] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus) -> None:
    config = session.config
    if hasattr(config, "workerinput") or CLUSTER_KEY not in config.stash:
        return  # xdist workers: the controller sees every report and writes once
    cluster = config.stash[CLUSTER_KEY]
    run = Run(cluster.name, outcomes=dict(outcomes), messages=dict(messages), warnings=list(degraded), measured=list(measured),
              thresholds={"ib_write_bw": cluster.expect.min_ib_write_bw_gbps, "decode_tok_s": cluster.serving.min_decode_tok_s})
    if config.getoption("--report-dir"):
        config.stash[REPORT_KEY] = write(run, Path(config.getoption("--report-dir")))
    # A -k subset proves nothing about the hosts as a whole: only full runs record the stage status.
    note = None if config.getoption("keyword") else record_stage(config.stash[PATH_KEY], outcomes)
    if note:
        config.stash[STAGE_KEY] = note


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    if REPORT_KEY in config.stash:
        md, page = config.stash[REPORT_KEY]
        terminalreporter.write_line(f"gb10check report: {md} and {page}")
    if STAGE_KEY in config.stash:
        terminalreporter.write_line(config.stash[STAGE_KEY])
    if PATH_KEY in config.stash and any(t.startswith("tests/serving/") for t in outcomes):
        from .stage import deployment_record_path

        record = deployment_record_path(config.stash[PATH_KEY])
        if not record.exists():
            terminalreporter.write_line(f"gb10check: no deployment record ({record}): the serving checks ran against whatever "
                                        "answers at the base URL, not a deployment made by gb10check")
    rows = measured
    if rows:
        terminalreporter.section("gb10check measurements")
        totals: dict[tuple[str, str], float] = {}
        for what, where, value, unit in rows:
            terminalreporter.write_line(f"{what:<28} {where:<64} {value:>10.2f} {unit}")
            totals[(what, unit)] = totals.get((what, unit), 0.0) + value
        for (what, unit), total in totals.items():
            if what == "ib_write_bw":  # the logical links add up; other figures do not
                terminalreporter.write_line(f"{what:<28} {'sum over all links':<64} {total:>10.2f} {unit}")


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
