"""The pytest plugin: installed for the whole environment, so it stays out of other people's tests.

It adds --cluster and --report-dir, parametrizes only names of its own (`_gb10check_node`,
`_gb10check_path` ...: testinfra's `_testinfra_host` trick), and records only tests that carry a
stage marker (preflight, network, serving, soak). The names the suite's tests use (`node`, `path`,
`cluster`, `api` ...) are fixtures in gb10check/fixtures.py, loaded by tests/conftest.py for the
suite's own tests and nowhere else: a user's test with a `node` or `path` of its own runs untouched.

- `_gb10check_node`: one test per node, id = node name.
- `_gb10check_follower`: one test per node but rank 0 (parity checks compare it with rank 0).
- `_gb10check_node_link`: one test per link of each node, id = "node:netdev".
- `_gb10check_link_pair`: one test per cable/link between two nodes, id = "a:netdev--b:netdev".
- `_gb10check_path`: one test per direction of each link, id = "a:netdev->b:netdev".
- `_gb10check_required_port`: one test per port the profile requires open.
- `_gb10check_node_pair`: one test per ordered pair of nodes (a reaches b), id = "a->b".
A name with no value on this cluster (a follower, a link or a node pair on a one-node cluster) gives its test one
instance, skipped with the reason ("needs a second node"), id = "needs-a-second-node": run and counted, so a one-node
cluster's run stays full for the gate, and listed once in the summary, never as an empty parameter set.
A node that cannot be reached fails its own reachability test; its other checks are NOT CHECKED.
The run's state (outcomes, findings, figures, warnings) lives on a Recorder kept in config.stash.

Findings leave pytest as data: each one a JUnit property `gb10check.finding` whose value is the finding as JSON (code,
severity, where, seen, expected, fix), each check's stage as `gb10check.stage`, and, with --report-dir, findings.json
beside the report. A check that could not look is, to pytest, a failure reported as NOT CHECKED; in JUnit an
`<error type="not-checked" message="CAUSE">` (property `gb10check.not_checked`: the cause), never a skip.
Failures and not-checked items that share a cause (report.causes(): an unreachable node, a missing tool, no RDMA device,
a prerequisite that failed) are told once: one entry each in the terminal summary and the report, with the checks it
failed or stopped named; in JUnit the testsuite lists them (`gb10check.cause`) and each testcase names its own.
"""

import contextlib
import fnmatch
import json
import os
import re
import time
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from .cluster import Cluster, ClusterError, Link, cluster_file_path, load_cluster, runner_problems
from . import gather, history, metrics
from .gather import Fleet, registry
from .remedies import Code
from .remote import CommandTimeout, NodeUnreachable, NotRecorded, RemoteError, RemoteNode
from .report import Run, cause_key, causes, shown, since_green, skip_reason, skips, write
from .stage import GATED, STAGES, file_hash, record_stages
from .verdict import Degraded, Finding, NotChecked, recording, report

HINT = ("no cluster file: pass --cluster PATH, set GB10CHECK_CLUSTER, or write a commented cluster.yaml with "
        "`gb10check init` and edit it (or run `gb10check sim up` and use the file it writes)")
PREFIX = "_gb10check_"

CLUSTER_KEY = pytest.StashKey[Cluster]()
FLEET_KEY = pytest.StashKey[Fleet]()
PATH_KEY = pytest.StashKey[Path]()
USAGE_KEY = pytest.StashKey[str]()
RECORDER_KEY = pytest.StashKey["Recorder"]()
MEASUREMENT = "gb10check_measurement"
VERSION = "gb10check_version"  # (node, what, version): the nodes' versions manifest (the `versions` fixture)
TABLE = "gb10check_table"
# JUnit properties (user_properties) the plugin writes; a finding's value is its JSON (verdict.Finding.as_dict()).
STAGE_PROPERTY = "gb10check.stage"
FINDING = "gb10check.finding"
NOT_CHECKED = "gb10check.not_checked"  # value: the cause; the report's outcome is failed, its category "not checked"
CAUSE = "gb10check.cause"  # on a testcase: "N: [code] node"; on the testsuite: each cause as JSON (report.causes())
WARNED_KEY = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gb10check")
    group.addoption("--cluster", metavar="PATH", help="cluster definition (default: $GB10CHECK_CLUSTER, else ./cluster.yaml)")
    group.addoption("--report-dir", metavar="DIR", help="write report.md and report.html (self-contained) there")
    group.addoption("--record", metavar="DIR", help="write what the run gathered (the facts' batch, the probes, the programs run "
                    "once) to DIR/recording.json.gz (mode 600: it holds the nodes' .env), to judge again with --facts-from")
    group.addoption("--facts-from", metavar="PATH", help="judge from a recording (a file, or a folder --record wrote) without "
                    "reaching any node; on its own cluster file unless --cluster names another. What it lacks is NOT "
                    "CHECKED (not-recorded)")
    group.addoption("--history", metavar="PATH", help="the run history (SQLite) this run is recorded in and judged against "
                    "(default: $GB10CHECK_HISTORY, else $XDG_DATA_HOME/gb10check/history.sqlite; off: none)")
    group.addoption("--metrics-file", metavar="PATH", help="write the run's figures as Prometheus text there (node_exporter's "
                    "textfile collector reads *.prom files in its folder)")


def pytest_configure(config: pytest.Config) -> None:
    given = config.getoption("--cluster")
    if given and config.inipath is None and given in config.invocation_params.args:
        # pytest picks its root before plugins add options, so it took PATH for a test path.
        raise pytest.UsageError(f"write --cluster={given} (with '='): with a space, pytest takes the path for a test path, "
                                f"picks {config.rootpath} as its root and misses gb10check's pytest.ini")
    suite_markers(config)
    config.addinivalue_line("markers", "gb10check_reads(*facts): the facts a check reads (gb10check.gather.reads)")
    if config.getoption("--record") and config.getoption("--facts-from"):
        raise pytest.UsageError("--record and --facts-from together: a run judged from a recording gathers nothing to record")
    config.stash[RECORDER_KEY] = recorder = Recorder(config)
    if not hasattr(config, "workerinput") and not config.getoption("--facts-from") and not config.option.collectonly:
        recorder.history_path = path = history.chosen(config.getoption("--history"))
        try:  # a file that cannot be used stops the run here, in one line, before any check; a new one is made at the end
            recorder.history = history.History.open(path) if path is not None and path.exists() else None
        except history.HistoryError as exc:
            raise pytest.UsageError(str(exc)) from None
    config.pluginmanager.register(recorder, "gb10check-recorder")
    if not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None) and not getattr(config.option, "testrunuid", None):
        # The run's id named here, so the controller can remove what its workers shared (gather.run_shared) at the end.
        config.option.testrunuid = uuid.uuid4().hex
    # An explicitly named file is validated before anything runs: a bad file stops here, in one line.
    if given or os.environ.get("GB10CHECK_CLUSTER"):
        get_cluster(config)
        if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput") and not config.option.collectonly:
            refuse_runner_problems(config)  # an xdist controller collects nothing: say it here, before workers start


def refuse_runner_problems(config: pytest.Config) -> None:
    """The runner's own set-up (known_hosts, key) fails every check of every node: say it once, before any test."""
    cluster = config.stash[CLUSTER_KEY]
    problems = [] if replaying(config) else runner_problems(cluster.ssh, over_ssh=any(n.connection == "ssh" for n in cluster.nodes))
    if problems:
        raise pytest.UsageError("runner set-up: " + "; ".join(problems))


def suite_markers(config: pytest.Config) -> None:
    """The suite's markers, from its pytest.ini, where another ini is in use (`pytest --pyargs gb10check.tests`)."""
    import configparser

    from . import suite

    try:
        ini = suite.ini().resolve()
    except suite.SuiteMissing:
        return
    if config.inipath is not None and Path(config.inipath).resolve() == ini:
        return
    parsed = configparser.ConfigParser(interpolation=None)
    parsed.read(ini)
    for line in parsed.get("pytest", "markers", fallback="").strip().splitlines():
        config.addinivalue_line("markers", line.strip())


def get_cluster(config: pytest.Config) -> Cluster:
    """The cluster, loaded once; a missing or bad file is a usage error (exit 4) in one line."""
    if CLUSTER_KEY not in config.stash and config.getoption("--facts-from"):
        return _replayed_cluster(config)
    if CLUSTER_KEY not in config.stash:
        given = config.getoption("--cluster") or os.environ.get("GB10CHECK_CLUSTER")
        path = cluster_file_path(given)
        if not given and not path.exists():
            raise pytest.UsageError(HINT)
        try:
            config.stash[CLUSTER_KEY] = load_cluster(path)
        except ClusterError as exc:
            raise pytest.UsageError(f"invalid cluster file: {exc}") from None
        config.stash[PATH_KEY] = path
        config.stash[FLEET_KEY] = fleet = Fleet(config.stash[CLUSTER_KEY])
        if hasattr(config, "workerinput"):  # a pytest-xdist worker: share the facts with the run's other workers
            fleet.run_id = config.workerinput.get("testrunuid")
    return config.stash[CLUSTER_KEY]


def _replayed_cluster(config: pytest.Config) -> Cluster:
    """--facts-from: the recording's cluster (or --cluster's, the same nodes judged against other expectations), on a
    fleet that reaches no node."""
    from .gather import recording

    source = config.getoption("--facts-from")
    try:
        recorded = recording.load(source)
        given = config.getoption("--cluster")
        cluster = load_cluster(cluster_file_path(given)) if given else None
        fleet = recording.replay(recorded, cluster)
    except (ValueError, ClusterError) as exc:
        raise pytest.UsageError(f"--facts-from {source}: {exc}") from None
    config.stash[CLUSTER_KEY] = fleet.cluster
    config.stash[PATH_KEY] = cluster_file_path(given) if given else Path(source)
    config.stash[FLEET_KEY] = fleet
    return fleet.cluster


def replaying(config: pytest.Config) -> bool:
    return FLEET_KEY in config.stash and config.stash[FLEET_KEY].replay is not None


def remote_node(config: pytest.Config, name: str) -> RemoteNode:
    get_cluster(config)
    return config.stash[FLEET_KEY].node(name)


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
    by_rank = cluster.by_rank()
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
        ports = cluster.required_ports()
        return ports, [f"port{p}" for p in ports]
    if name == "node_pair":
        pairs = [(a, b) for a in by_rank for b in by_rank if a.name != b.name]
        return [(node(a), node(b)) for a, b in pairs], [f"{a.name}->{b.name}" for a, b in pairs]
    raise KeyError(name)


PARAMETRIZED = ("node", "follower", "node_link", "link_pair", "path", "required_port", "node_pair")
PAIRS = ("follower", "link_pair", "path", "node_pair")  # values only where the cluster has two nodes or more
SECOND_NODE = "needs a second node (the cluster file names one)"
# Why a name other than a pair has no value: the id of the one skipped instance and its reason.
NO_VALUE = {"node_link": ("no-links", "the cluster file names no links (nodes[].links)"),
            "link_pair": ("no-links", "the cluster file names no link between two nodes (nodes[].links)"),
            "path": ("no-links", "the cluster file names no link between two nodes (nodes[].links)"),
            "required_port": ("no-ports", "the profile requires no open port (expect.reachable_ports)")}


class _NoInstance:
    """The value of a test's one instance where its parameter has none on this cluster (it is skipped before setup)."""

    def __repr__(self) -> str:
        return "<no instance on this cluster>"


NO_INSTANCE = _NoInstance()
NO_INSTANCE_REASONS = {SECOND_NODE} | {reason for _, reason in NO_VALUE.values()}


def no_instance(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and any(v is NO_INSTANCE for v in callspec.params.values())


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    wanted = [name for name in PARAMETRIZED if PREFIX + name in metafunc.fixturenames]
    if not wanted:
        return
    config = metafunc.config
    try:
        cluster = get_cluster(config)
    except pytest.UsageError as exc:
        # Raised here it would read as a collection traceback; report it once, after collection.
        config.stash[USAGE_KEY] = str(exc)
        for name in wanted:
            metafunc.parametrize(PREFIX + name, [])
        return
    params = {name: _params(config, cluster, name) for name in wanted}
    empty = [name for name in wanted if not params[name][0]]
    if empty:
        if len(cluster.nodes) < 2 and set(empty) & set(PAIRS):
            id_, reason = "needs-a-second-node", SECOND_NODE
        else:
            id_, reason = NO_VALUE.get(empty[0], ("none", f"the cluster file gives {empty[0]} no value"))
        metafunc.parametrize([PREFIX + name for name in wanted],
                             [pytest.param(*[NO_INSTANCE] * len(wanted), id=id_, marks=pytest.mark.skip(reason=reason))])
        return
    for name in wanted:
        values, ids = params[name]
        metafunc.parametrize(PREFIX + name, values, ids=ids)


def _unparametrized(request: pytest.FixtureRequest):
    raise pytest.UsageError(f"{request.fixturename} is parametrized by gb10check's plugin from the cluster file only")


# Private names, parametrized above; the public ones (node, path ...) are in gb10check/fixtures.py.
for _name in PARAMETRIZED:
    globals()[PREFIX + _name] = pytest.fixture(name=PREFIX + _name)(_unparametrized)


@pytest.fixture(name=PREFIX + "cluster", scope="session")
def _cluster(pytestconfig: pytest.Config) -> Cluster:
    return get_cluster(pytestconfig)


@pytest.fixture(name=PREFIX + "cluster_file", scope="session")
def _cluster_file(pytestconfig: pytest.Config, _gb10check_cluster: Cluster) -> Path:
    return pytestconfig.stash[PATH_KEY]


@pytest.fixture(name=PREFIX + "head", scope="session")
def _head(pytestconfig: pytest.Config, _gb10check_cluster: Cluster) -> RemoteNode:
    return remote_node(pytestconfig, _gb10check_cluster.head.name)


def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    if USAGE_KEY in config.stash:
        raise pytest.UsageError(config.stash[USAGE_KEY])
    if CLUSTER_KEY in config.stash and not config.option.collectonly and any(stage_of(i.keywords) for i in session.items):
        config.stash[FLEET_KEY].wanted = {f for i in session.items for f in declared_facts(i)}
        refuse_runner_problems(config)


def declared_facts(item: pytest.Item) -> tuple[str, ...]:
    """The facts a check declared with @reads(...)."""
    return tuple(f for m in item.iter_markers("gb10check_reads") for f in m.args)


def stage_of(keywords) -> str | None:
    """The stage a test belongs to, from its marker: preflight, network, serving or soak (None: not one of ours)."""
    return next((s for s in STAGES if s in keywords), None)


def _remote_finding(exc: RemoteError) -> Finding:
    node = exc.node
    name = node.name if node is not None else "node"
    if isinstance(exc, NotRecorded):
        return Finding(Code.NOT_RECORDED, name, str(exc), "a recording that holds it")
    if isinstance(exc, NodeUnreachable):  # its own kind's code and fix; not checked here, the reachability check's failure
        return Finding(exc.code, name, str(exc), "an SSH session", unchecked=True, **exc.params)
    code = Code.COMMAND_TIMEOUT if isinstance(exc, CommandTimeout) else Code.COMMAND_FAILED
    return Finding(code, name, str(exc), "the command to complete", command=exc.command or "the command")


@contextlib.contextmanager
def _as_a_check(item: pytest.Item):
    """Around a check's setup and call: an unreachable node or a command that timed out is NOT CHECKED in one paragraph,
    not a paramiko traceback; the Degraded findings report() gives are kept as data for makereport."""
    with recording() as warned:
        try:
            yield
        except RemoteError as exc:
            report([_remote_finding(exc)])
        finally:
            item.stash[WARNED_KEY] = item.stash.get(WARNED_KEY, []) + warned


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    with _as_a_check(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    # A check reads only the facts it declared.
    ours = stage_of(item.keywords) is not None and CLUSTER_KEY in item.config.stash
    token = registry.declared(declared_facts(item), item.config.stash[CLUSTER_KEY]) if ours else None
    try:
        with _as_a_check(item):
            return (yield)
    finally:
        if token is not None:
            registry.undeclare(token)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """The suite's checks: their findings onto the report as data (from the raised exception and the warnings given)."""
    rep = yield
    stage = stage_of(item.keywords)
    if stage is None or call.when == "teardown":
        return rep
    if rep.skipped and no_instance(item) and isinstance(rep.longrepr, tuple) and PATH_KEY in item.config.stash:
        # Located at the cluster file, one location for all: pytest's summary folds them into one line.
        rep.longrepr = (str(item.config.stash[PATH_KEY]), None, rep.longrepr[2])
    added = [(STAGE_PROPERTY, stage)] if call.when == "setup" else []
    found = list(getattr(call.excinfo.value, "findings", None) or []) if call.excinfo is not None else []
    found += item.stash.get(WARNED_KEY, [])
    item.stash[WARNED_KEY] = []
    added += [(FINDING, json.dumps(f.as_dict())) for f in found]
    if call.excinfo is not None and call.excinfo.errisinstance(NotChecked):
        rep.gb10check_not_checked = True  # kept when pytest-xdist carries the report to the controller
        rep.longrepr = str(call.excinfo.value.msg)  # the cause and how to check by hand, not a chained traceback
        added.append((NOT_CHECKED, "; ".join(f.text.splitlines()[0] for f in call.excinfo.value.findings)
                      or str(call.excinfo.value.msg)))
    # On the item too: a report copies the item's list when made, and JUnit reads the properties of the last one.
    item.user_properties.extend(added)
    rep.user_properties.extend(added)
    return rep


def is_not_checked(report: pytest.TestReport) -> bool:
    return report.failed and bool(getattr(report, "gb10check_not_checked", False))


def findings_of(report: pytest.TestReport) -> list[dict]:
    """Every finding recorded for the report's test so far (a test's user_properties build up over its phases)."""
    return [json.loads(value) for key, value in report.user_properties if key == FINDING]


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    if is_not_checked(report):
        return "not checked", "N", ("NOT CHECKED", {"yellow": True})
    return None


def wrap(text: str, width: int, first: str = "", rest: str = "    ") -> str:
    """A line of names ("3 checks on n1: failed a; not checked b, c (x2)") folded to the terminal's width after a comma,
    semicolon or colon, never inside a name."""
    lines, line = [], first
    for part in re.split(r"(?<=[,;:]) ", text):
        if line.strip() and len(line) + 1 + len(part) > width:
            lines.append(line)
            line = rest + part
        else:
            line += part if not line.strip() else " " + part
    return "\n".join(lines + [line])


class Recorder:
    """What the suite's checks recorded in this run: outcomes, findings, figures, warnings (for the report, findings.json
    and the stage status), and whether the run was a full run of each gated stage."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.outcomes: dict[str, str] = {}  # test id -> passed | warning | failed | error | skipped | not checked
        self.stages: dict[str, str] = {}  # test id -> preflight | network | serving | soak
        self.findings: dict[str, list[dict]] = {}  # test id -> its findings as data (verdict.Finding.as_dict())
        self.messages: dict[str, str] = {}
        self.measured: list[tuple] = []
        self.tables: list[tuple[str, str]] = []
        self.degraded: list[str] = []
        self.report_files: tuple | None = None
        self.stage_notes: list[str] = []
        self.recorded_to: Path | None = None  # --record: the file this process wrote
        self.found: dict[str, set[str]] = {}  # stage -> test ids collected, before anything was deselected
        self.modules: set[Path] = set()  # the test files that gave items
        self.narrowed: dict[str, list[str]] | None = None  # gated stage -> why this run is not a full run of it
        self.selected: dict[str, list[str]] = {}  # gated stage -> the test ids selected to run
        self.worker_narrowed: list[dict] = []  # under pytest-xdist, each worker's `narrowed`
        self.versions: dict[str, dict[str, str]] = {}  # node -> what -> version (the `versions` fixture)
        self.history: history.History | None = None  # the run history this run is recorded in (None: off, a worker)
        self.history_path: Path | None = None  # where it is (None: off, a worker, a run judged from a recording)
        self.history_note = ""  # why this run was not recorded
        self.past: history.Against | None = None
        self.recorded_run: int | None = None
        self.metrics_file: Path | None = None

    # A stage's run is full when nothing of it was left out. Told apart at collection, from the suite's own files and
    # items, not from the options that narrow (-k, -m, --deselect, paths, --ignore, --lf, plugins ...), so an option
    # this code does not know of is caught as well: every test file under the suite's root (the ini's testpaths) gave
    # items, no argument names a single test (`file::test`), every check of the stage collected is still selected, and
    # every one selected gave an outcome (a run stopped by -x, --maxfail or Ctrl-C is partial too).
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list):
        for item in items:
            self.modules.add(Path(item.path))
            stage = stage_of(item.keywords)
            if stage is not None:
                self.found.setdefault(stage, set()).add(item.nodeid)
        return (yield)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        config = self.config
        if not self.found:
            return  # none of the suite's checks: someone else's tests
        selected: dict[str, set[str]] = {}
        for item in session.items:
            stage = stage_of(item.keywords)
            if stage is not None:
                selected.setdefault(stage, set()).add(item.nodeid)
        common = []
        named = [a for a in config.args if "::" in a]
        if named:
            common.append(f"narrowed to single tests ({', '.join(named[:3])})")
        roots = [config.rootpath / p for p in config.getini("testpaths")]
        if not roots:
            common.append("the suite's root is unknown (no testpaths in the ini)")
        patterns = config.getini("python_files")
        files = {f.resolve() for r in roots for f in r.rglob("*.py")
                 if any(fnmatch.fnmatch(f.name, p) for p in patterns) and not any(part.startswith((".", "__")) for part in f.relative_to(r).parts[:-1])}
        missing = sorted(files - {m.resolve() for m in self.modules})
        if missing:
            common.append(f"{len(missing)} test file(s) of the suite not collected (paths, --ignore, --lf ...): "
                          f"{', '.join(str(m.relative_to(config.rootpath)) for m in missing[:3])}")
        self.narrowed = {}
        for stage in GATED:
            reasons = list(common)
            left_out = self.found.get(stage, set()) - selected.get(stage, set())
            if left_out:
                reasons.append(f"{len(left_out)} of {len(self.found[stage])} {stage} checks deselected (-k, -m, --deselect ...)")
            self.narrowed[stage] = reasons
            self.selected[stage] = sorted(selected.get(stage, set()))
        if hasattr(config, "workerinput"):
            config.workeroutput["gb10check_narrowed"] = self.narrowed
            config.workeroutput["gb10check_selected"] = self.selected

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:  # pytest-xdist, on the controller: what each worker collected
        output = getattr(node, "workeroutput", None) or {}
        if "gb10check_narrowed" in output:
            self.worker_narrowed.append(output["gb10check_narrowed"])
            for stage, ids in output.get("gb10check_selected", {}).items():
                self.selected[stage] = sorted(set(self.selected.get(stage, [])) | set(ids))

    def full_stages(self) -> dict[str, list[str]]:
        """Gated stage -> why this run is not a full run of it ([] when it is)."""
        if self.narrowed is not None and not self.worker_narrowed:
            narrowed = {stage: list(reasons) for stage, reasons in self.narrowed.items()}
        elif not self.worker_narrowed:
            return {stage: ["no collection seen (pytest-xdist workers gave none)"] for stage in GATED}
        else:
            narrowed = {stage: sorted({r for w in self.worker_narrowed for r in w.get(stage, ["a worker gave no collection"])})
                        for stage in GATED}
        for stage in GATED:
            unrun = [t for t in self.selected.get(stage, []) if t not in self.outcomes]
            if unrun:
                narrowed[stage].append(f"{len(unrun)} {stage} checks did not run (stopped early: -x, --maxfail, interrupted ...)")
        return narrowed

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        stage = stage_of(report.keywords)
        if stage is None:
            return  # not one of the suite's checks
        if report.when == "call":
            self.measured += [tuple(value) for key, value in report.user_properties if key == MEASUREMENT]
            for key, value in report.user_properties:
                if key == VERSION:
                    self.versions.setdefault(value[0], {})[value[1]] = str(value[2])
            self.tables += [tuple(value) for key, value in report.user_properties if key == TABLE]
        self.findings[report.nodeid] = findings_of(report)  # cumulative over the phases: the last report has them all
        # One outcome per test: a failed setup or teardown is an error.
        if report.when == "call" or (report.when == "setup" and not report.passed) or (report.when == "teardown" and report.failed):
            if self.outcomes.get(report.nodeid) in ("failed", "error", "not checked"):
                return
            outcome = "error" if report.failed and report.when != "call" else report.outcome
            if is_not_checked(report):
                outcome = "not checked"
                self.messages[report.nodeid] = str(report.longrepr)
            elif report.skipped:
                self.messages[report.nodeid] = skip_reason(report.longrepr)
            elif report.failed:
                self.messages[report.nodeid] = report.longreprtext
            elif any(f["severity"] == "warning" for f in self.findings[report.nodeid]):
                outcome = "warning"
            self.outcomes[report.nodeid] = outcome
            self.stages[report.nodeid] = stage

    def pytest_warning_recorded(self, warning_message, when, nodeid, location) -> None:
        if issubclass(warning_message.category, Degraded):
            self.degraded.append(str(warning_message.message))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus) -> None:
        config = self.config
        xdist_controller = getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput")
        if config.getoption("--record") and FLEET_KEY in config.stash and not xdist_controller:  # its workers gathered
            self.recorded_to = record_run(config)
        if not hasattr(config, "workerinput") and getattr(config.option, "testrunuid", None):
            gather.remove_shared(config.option.testrunuid)
        if hasattr(config, "workerinput") or CLUSTER_KEY not in config.stash or not self.outcomes:
            return  # xdist workers: the controller sees every report and writes once
        cluster = config.stash[CLUSTER_KEY]
        full = self.full_stages()
        run = Run(cluster.name, outcomes=dict(self.outcomes), messages=dict(self.messages), warnings=list(self.degraded),
                  measured=list(self.measured), tables=list(self.tables), stages=dict(self.stages),
                  findings={t: list(self.findings.get(t, [])) for t in self.outcomes},
                  cluster_file=str(config.stash[PATH_KEY].resolve()), cluster_sha256=file_hash(config.stash[PATH_KEY]),
                  complete_stages=[s for s in GATED if s in self.stages.values() and not full.get(s)],
                  thresholds={"ib_write_bw": cluster.expect.min_ib_write_bw_gbps, "decode_tok_s": cluster.serving.min_decode_tok_s},
                  versions={n: dict(v) for n, v in self.versions.items()})
        if self.history is None and self.history_path is not None and not replaying(config):
            try:
                self.history = history.History.open(self.history_path)
            except history.HistoryError as exc:
                self.history_path = None
                self.history_note = f"gb10check history: not recorded: {exc}"
        if self.history is not None and not replaying(config):
            run.past = self.past = history.against(self.history, cluster.history_name, run.versions, run.measured,
                                                   cluster.expect.max_drop_from_baseline)
            run.warnings += [d.text for d in run.past.drops]
        if config.getoption("--report-dir"):
            self.report_files = write(run, Path(config.getoption("--report-dir")))
        if self.history is not None and not replaying(config):
            self.recorded_run = self.history.record(
                started=run.started, cluster=cluster.history_name, cluster_file=run.cluster_file, cluster_sha256=run.cluster_sha256,
                outcomes=run.outcomes, stages=run.stages, complete_stages=run.complete_stages, findings=run.findings,
                measured=run.measured, versions=run.versions)
        if config.getoption("--metrics-file"):
            self.metrics_file = metrics.write(Path(config.getoption("--metrics-file")), metrics.text(
                run.cluster, run.measured, run.outcomes, time.time(), history.green(run.outcomes)))
        # Each gated stage is recorded on its own; a run that left any of a stage out never records it as passed. A run
        # judged from a recording looked at no node: it records no stage.
        if replaying(config):
            self.stage_notes = [f"gb10check: judged from the recording {config.getoption('--facts-from')}, no node reached; "
                                "no stage recorded"]
        else:
            self.stage_notes = record_stages(config.stash[PATH_KEY], run, full)
        # Not checked is never a pass: a run that could not look at everything does not exit 0.
        if session.exitstatus == pytest.ExitCode.OK and "not checked" in self.outcomes.values():
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def run(self) -> Run:
        """What the run recorded so far, as the report reads it."""
        return Run("", outcomes=dict(self.outcomes), messages=dict(self.messages), stages=dict(self.stages),
                   findings={t: list(self.findings.get(t, [])) for t in self.outcomes})

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config: pytest.Config) -> None:
        run = self.run()
        if self.past is not None:  # what changed since the last green run first: it often explains the rest
            said = since_green(Run("", versions=dict(self.versions), past=self.past))
            if said:
                terminalreporter.section(f"gb10check: {said[0].lower()}")
                for line in said[1:]:
                    terminalreporter.write_line(line)
            if self.past.drops:
                terminalreporter.section(f"gb10check: {len(self.past.drops)} figure{'s' if len(self.past.drops) != 1 else ''} "
                                         "under the baseline (warnings)")
                for drop in self.past.drops:
                    terminalreporter.write_line(drop.text)
        found = causes(run)
        width = max(getattr(getattr(terminalreporter, "_tw", None), "fullwidth", 80), 60)
        if found:
            unchecked = sum(o == "not checked" for o in self.outcomes.values())
            terminalreporter.section(f"gb10check: {len(found)} cause{'s' if len(found) != 1 else ''} of "
                                     f"{len({t for c in found for t in c.tests})} checks failed or not checked ({unchecked} not "
                                     "checked: could not look, neither a pass nor a fault of the cluster)")
            for cause in found:
                # A failure without a finding printed its own text above (pytest's failures); its first line here.
                terminalreporter.write_line(cause.text if cause.lead is not None else cause.title)
                terminalreporter.write_line(wrap(cause.checks(), width - 1, "  "))
        for reason, tests in skips(run).items():
            if reason in NO_INSTANCE_REASONS:  # one line for the checks a parameter without value left out
                names = ", ".join(t.split("::", 1)[-1].split("[")[0] for t in tests)
                terminalreporter.write_line(wrap(f"gb10check: {reason}: {len(tests)} check{'s' if len(tests) != 1 else ''} "
                                                 f"not run: {names}", width - 1))
        timing = config.stash[FLEET_KEY].timing if FLEET_KEY in config.stash else {}
        if timing:  # this process's own phases (under -n each worker gathers for itself)
            terminalreporter.write_line("gb10check timing: " + ", ".join(f"{k} {v:.2f} s" for k, v in timing.items())
                                        + " (wall, every node at once)")
        if self.recorded_to:
            terminalreporter.write_line(f"gb10check: recorded what this run gathered in {self.recorded_to}")
        if self.history_note:
            terminalreporter.write_line(self.history_note)
        if self.recorded_run is not None:
            terminalreporter.write_line(f"gb10check history: run #{self.recorded_run} in {self.history.path} "
                                        f"(`gb10check history show {self.recorded_run}`)")
        if self.metrics_file is not None:
            terminalreporter.write_line(f"gb10check metrics: {self.metrics_file}")
        if self.report_files:
            md, page, data = self.report_files
            terminalreporter.write_line(f"gb10check report: {md}, {page} and {data}")
        for title, text in self.tables:
            terminalreporter.section(f"gb10check {title}")
            terminalreporter.write_line(text)
        for note in self.stage_notes:
            terminalreporter.write_line(note)
        if PATH_KEY in config.stash and {"serving", "soak"} & set(self.stages.values()):
            from .stage import deployment_record_path

            record = deployment_record_path(config.stash[PATH_KEY])
            if not record.exists():
                terminalreporter.write_line(f"gb10check: no deployment record ({record}): the serving checks ran against whatever "
                                            "answers at the base URL, not a deployment made by gb10check")
        if self.measured:
            terminalreporter.section("gb10check measurements")
            totals: dict[tuple[str, str], float] = {}
            for what, where, value, unit in self.measured:
                terminalreporter.write_line(f"{what:<28} {where:<64} {shown(value):>10} {unit}")
                if isinstance(value, (int, float)):
                    totals[(what, unit)] = totals.get((what, unit), 0.0) + value
            for (what, unit), total in totals.items():
                if what == "ib_write_bw":  # the logical links add up; other figures do not
                    terminalreporter.write_line(f"{what:<28} {'sum over all links':<64} {total:>10.2f} {unit}")


def record_run(config: pytest.Config) -> Path:
    """--record DIR: what this process's fleet gathered (under pytest-xdist each worker writes its own file)."""
    from .gather import recording

    worker = getattr(config, "workerinput", {}).get("workerid")
    path = Path(config.getoption("--record")) / f"{recording.NAME}{f'-{worker}' if worker else ''}.json.gz"
    got = recording.of_fleet(config.stash[FLEET_KEY], config.stash[PATH_KEY].read_text(),
                             f"pytest --record of {config.stash[PATH_KEY]}")
    return recording.write(got, path)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """After pytest's junitxml wrote its file: each not-checked check's <failure> or <error> becomes
    <error type="not-checked" message="CAUSE">, found by its `gb10check.not_checked` property (the file's own data).
    Each cause once: the testsuite lists them (`gb10check.cause`, JSON: its text and the checks it failed or stopped), and
    each testcase names its own; a testcase keeps its own two lines (CI pages show one testcase at a time)."""
    path = getattr(session.config.option, "xmlpath", None)
    if not path or hasattr(session.config, "workerinput") or not os.path.exists(path):
        return
    recorder = session.config.stash.get(RECORDER_KEY, None)
    found = causes(recorder.run()) if recorder is not None else []
    number = {cause.key: i for i, cause in enumerate(found, 1)}
    tree = ET.parse(path)
    changed = False
    for n, suite in enumerate(tree.getroot().iter("testsuite")):
        if found and n == 0:
            listed = suite.find("properties")
            if listed is None:
                listed = ET.Element("properties")
                suite.insert(0, listed)
            for i, cause in enumerate(found, 1):
                ET.SubElement(listed, "property", {"name": CAUSE, "value": json.dumps(
                    {"cause": i, "title": cause.title, "text": cause.text, "checks": cause.checks(), "tests": list(cause.tests)})})
            changed = True
        for case in suite.iter("testcase"):
            keys = [cause_key(f) for f in (json.loads(p.get("value", "{}")) for p in case.iter("property") if p.get("name") == FINDING)
                    if f.get("severity") in ("failure", "not-checked")]
            keys = [k for k in dict.fromkeys(keys) if k in number]
            if keys:
                props = case.find("properties")
                for k in keys:
                    ET.SubElement(props, "property", {"name": CAUSE, "value": f"{number[k]}: {found[number[k] - 1].title}"})
                changed = True
            unchecked = [p.get("value", "") for p in case.iter("property") if p.get("name") == NOT_CHECKED]
            if not unchecked:
                continue
            olds = [el for el in case if el.tag in ("failure", "error")]
            if not olds:
                continue
            at = list(case).index(olds[0])
            for old in olds:
                case.remove(old)
                suite.set(old.tag + "s", str(max(int(suite.get(old.tag + "s", "1")) - 1, 0)))
            new = ET.Element("error", {"type": "not-checked", "message": unchecked[-1]})
            new.text = "\n".join(old.text or "" for old in olds)
            case.insert(at, new)
            suite.set("errors", str(int(suite.get("errors", "0")) + 1))
            changed = True
    if changed:
        tree.write(path, encoding="utf-8", xml_declaration=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    recorder = config.stash.get(RECORDER_KEY, None)
    if recorder is not None and recorder.history is not None:
        recorder.history.close()
    if FLEET_KEY in config.stash:
        for node in config.stash[FLEET_KEY].nodes.values():
            node.close()
