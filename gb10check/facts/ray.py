"""Ray (deploy.executor: ray): the version in the image, `ray status`, and the node list with each node's address.

Three outputs, each read as the tool prints it:
- `ray --version` (click's "ray, version 2.60.0") and the import of the Python module the suite prints after it
  (`ray.__version__=2.60.0`), or the errors of an image without Ray: bash's `ray: command not found` (the playbook's
  dgx-spark-playbooks issues 75 and 109) and Python's `ModuleNotFoundError: No module named 'ray'`;
- `ray status` (Ray 2.x's autoscaler summary: "======== Autoscaler status: TIME ========", "Node status", "Active:"
  with one " 1 node_<id>" line per node on a cluster made with `ray start`, or "Healthy:" in older Ray, autoscaler v2's
  "Idle:" (alive nodes that run nothing, counted in `nodes` too), "Pending:", "Recent failures:", "Resources",
  "Total Usage:" (older: "Usage:") with " 0.0/2.0 GPU" lines (memory "0B/10.00GiB"; Ray 1.x-2.2 "0.00/10.000 GiB
  memory"), "Pending Demands:" (older: "Demands:"), and with -v a "Node: ..." block per node), or "No cluster status." while Ray starts. It names
  no addresses on such a cluster (its nodes are keyed by id), hence the node list below;
- the node list: `ray.nodes()` printed as JSON (NodeID, Alive, NodeManagerAddress, NodeManagerHostname, Resources,
  what gather.RAY_NODES prints; it needs no dashboard), or `ray list nodes --format json` (node_id, node_ip,
  is_head_node, state, node_name, resources_total; needs the dashboard).
"""

import json
import re
from dataclasses import dataclass, field

from ._text import ParseError, parser

CLI_VERSION = re.compile(r"^ray, version (\d+\.\d+\.\d+\S*)", re.M)
MODULE_VERSION = re.compile(r"^ray\.__version__=(\d+\.\d+\.\d+\S*)", re.M)
CLI_MISSING = re.compile(r"^(?:.*: )?ray: (?:command not found|not found|No such file or directory)\s*$", re.M)
MODULE_MISSING = re.compile(r"^ModuleNotFoundError: No module named 'ray'", re.M)


@dataclass
class RayVersion:
    cli: str | None  # `ray --version`
    module: str | None  # `import ray; ray.__version__`
    errors: list[str] = field(default_factory=list)  # the lines that say Ray is missing

    @property
    def version(self) -> str | None:
        return self.module or self.cli


@parser
def parse_version(text: str) -> RayVersion:
    cli, module = CLI_VERSION.search(text), MODULE_VERSION.search(text)
    errors = [m.group(0).strip() for rx in (CLI_MISSING, MODULE_MISSING) for m in rx.finditer(text)]
    if not (cli or module or errors):
        raise ParseError("ray_version", "'ray, version X' (ray --version), 'ray.__version__=X', or 'ray: command not found'",
                         text)
    return RayVersion(cli[1] if cli else None, module[1] if module else None, errors)


# Ray 1.x prints "Cluster status" (no node types: " 2 node(s) with resources: {...}" lines under "Node status").
HEADER = re.compile(r"^=+ (?:Autoscaler|Cluster) status: (?P<time>.+?) =+$", re.M)
# "0.0/2.0 GPU", "0B/169.24GiB memory" (Ray 2.3+), "0.00/2486.849 GiB memory" (Ray 1.x-2.2: one unit after both numbers).
USAGE = re.compile(r"^(?P<used>[\d.]+(?:[KMGTP]?i?B)?)(?: (?P<used_unit>[KMGTP]i?B))?/(?P<total>[\d.]+(?:[KMGTP]?i?B)?)"
                   r"(?: (?P<unit>[KMGTP]i?B))? (?P<resource>\S+)")
NODE_COUNT = re.compile(r"^(?P<count>\d+) (?P<type>\S+)(?: \(.*\))?$")
NO_TYPES_NODES = re.compile(r"^(?P<count>\d+) node\(s\) with resources: (?P<type>.+)$")
SECTIONS = {"Active:": "active", "Healthy:": "active", "Idle:": "idle", "Pending:": "pending", "Recent failures:": "failures",
            "Total Usage:": "usage", "Usage:": "usage", "From request_resources:": "requests", "Pending Demands:": "demands",
            "Demands:": "demands", "Total Demands:": "demands", "Total Constraints:": "requests"}
NO_STATUS = "No cluster status."
DEMAND = re.compile(r"^\{.*: \d+\+? pending (?:tasks/actors|placement groups)$")
VERBOSE_TIMING = re.compile(r"^[A-Z][\w ]+ time: [\d.]+s$")  # -v: "GCS request time: 0.001230s"


@dataclass
class RayStatus:
    time: str | None = None
    active: dict[str, int] = field(default_factory=dict)  # node type -> count ("node_<id>": 1 on a `ray start` cluster)
    idle: dict[str, int] = field(default_factory=dict)  # autoscaler v2's "Idle:" nodes: alive, running nothing
    pending: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    usage: dict[str, tuple[str, str]] = field(default_factory=dict)  # resource -> (used, total) as printed
    demands: list[str] = field(default_factory=list)  # pending demands, as printed ("{'GPU': 1.0} * 1 (PACK): ...")
    ready: bool = True  # False: "No cluster status." (Ray's internal services still starting)

    @property
    def nodes(self) -> int:
        """Alive nodes: "Active:" (older: "Healthy:") and, with autoscaler v2, "Idle:" ones (alive, running nothing)."""
        return sum(self.active.values()) + sum(self.idle.values())

    def total(self, resource: str) -> float | None:
        got = self.usage.get(resource)
        try:
            return float(got[1]) if got else None
        except ValueError:
            return None

    @property
    def demanded_node_addresses(self) -> list[str]:
        """Addresses that pending demands pin a bundle to ({'node:192.168.50.192': 0.001, 'GPU': 1.0}): vLLM asks for a GPU
        on the driver's own node, so an address here that no node has is the node's wrong address."""
        return sorted({m[1] for d in self.demands for m in re.finditer(r"'node:(\d+\.\d+\.\d+\.\d+)'", d)})


@parser
def parse_status(text: str) -> RayStatus:
    if NO_STATUS in text and not HEADER.search(text):
        return RayStatus(ready=False)
    header = HEADER.search(text)
    if not header:
        raise ParseError("ray_status", "`ray status` output ('======== Autoscaler status: ... ========')", text)
    if not re.search(r"^Node status\s*$", text[header.end():], re.M):
        # every Ray version prints "Node status" right under the header: without it the nodes are not shown, not none
        raise ParseError("ray_status", "`ray status` output with its 'Node status' section (this one stops after its header)",
                         text)
    status = RayStatus(time=header["time"])
    section = None
    seen: set[str] = set()
    noted: set[str | None] = set()  # sections that said they have no entries: "(no pending nodes)"

    def unplaced(line: str, why: str):
        # A line the summary's layout has no place for (cut, repeated, or another tool's) makes the status unreadable:
        # never a cluster with a node or a GPU fewer.
        return ParseError("ray_status", f"`ray status` lines in their sections ({why})", line)

    for line in text[header.end():].splitlines():
        stripped = line.strip()
        if not stripped or set(stripped) == {"-"} or stripped in ("Node status", "Resources"):
            continue
        if stripped in SECTIONS and not line.startswith(" "):
            section = SECTIONS[stripped]
            if stripped in seen:
                raise unplaced(line, f"'{stripped}' twice")
            seen.add(stripped)
            continue
        if line.startswith("Node: "):
            section = "per-node"  # `ray status -v`: the per-node breakdown, keyed by node id on a `ray start` cluster
            continue
        if section == "per-node" and line.startswith(" "):
            continue  # the per-node blocks repeat the totals above, node by node
        if not line.startswith(" "):
            if section is None and VERBOSE_TIMING.match(stripped):
                continue  # `ray status -v`'s timings under the header
            raise unplaced(line, "an unindented line that is no section name")
        if stripped.startswith("("):  # "(no pending nodes)", "(no resource demands)" ...
            if not stripped.endswith(")"):
                raise unplaced(line, "a note cut short")
            noted.add(section)
            continue
        if section in noted:  # "(no active nodes)" and then a node: two sections run together
            raise unplaced(line, f"an entry under {section} after its note that there is none")
        if section in (None, "active") and (m := NO_TYPES_NODES.match(stripped)):
            seen.add("Active:")
            if m["type"] in status.active:
                raise unplaced(line, "a node type listed twice")
            status.active[m["type"]] = int(m["count"])
        elif section in ("active", "idle") and (m := NODE_COUNT.match(stripped)):
            nodes = getattr(status, section)
            if m["type"] in nodes:  # one line per node type (or per node id): a repeat is a damaged paste
                raise unplaced(line, "a node listed twice")
            nodes[m["type"]] = int(m["count"])
        elif section == "usage" and (m := USAGE.match(stripped)):
            unit = m["unit"] or ""  # the unit printed once after both numbers applies to both
            if m["resource"] in status.usage:
                raise unplaced(line, "a resource listed twice")
            status.usage[m["resource"]] = (m["used"] + (m["used_unit"] or unit), m["total"] + unit)
        elif section in ("pending", "failures", "demands"):
            if NODE_COUNT.match(stripped) or USAGE.match(stripped) or stripped.endswith(":"):  # out of its section
                raise unplaced(line, f"a node count, resource or section line under {section}")
            if section == "demands" and not DEMAND.match(stripped):
                raise unplaced(line, "a demand '{...}: N+ pending tasks/actors' or '... (PACK): N+ pending placement groups'")
            if stripped in getattr(status, section):  # Ray sums identical entries into one line
                raise unplaced(line, f"the same {section} line twice")
            getattr(status, section).append(stripped)
        elif section == "requests":
            continue  # resources asked for with request_resources(): no check reads them
        else:
            raise unplaced(line, f"a line that does not read as a {section or 'node status'} entry")
    # The node list and the resource totals are the answer: a status cut (or trimmed) before either says neither.
    if not seen & {"Active:", "Healthy:", "Idle:"}:
        raise ParseError("ray_status", "`ray status` output with its node list ('Active:' / 'Healthy:' / 'Idle:')", text)
    if not seen & {"Total Usage:", "Usage:"}:
        raise ParseError("ray_status", "`ray status` output with its resource totals ('Total Usage:' / 'Usage:')", text)
    if not seen & {"Pending Demands:", "Demands:", "Total Demands:"}:  # printed after the totals by every Ray version
        raise ParseError("ray_status", "`ray status` output down to its demands ('Pending Demands:' / 'Demands:'); this "
                                       "one is cut short", text)
    return status


@dataclass
class RayNode:
    node_id: str
    address: str  # the address the node registered with (--node-ip-address, else what Ray picked)
    hostname: str | None
    alive: bool
    head: bool
    gpus: float
    resources: dict[str, float] = field(default_factory=dict)


def _node(d: dict) -> RayNode | None:
    if "NodeManagerAddress" in d:  # ray.nodes()
        resources = d.get("Resources") or {}
        alive = d.get("Alive", d.get("alive"))
        return RayNode(str(d.get("NodeID") or ""), str(d["NodeManagerAddress"]), d.get("NodeManagerHostname"), alive is True,
                       "node:__internal_head__" in resources, _number(resources.get("GPU")), _numbers(resources))
    if "node_ip" in d:  # ray list nodes --format json
        resources = d.get("resources_total") or {}
        return RayNode(str(d.get("node_id") or ""), str(d["node_ip"]), d.get("node_name"), d.get("state") == "ALIVE",
                       d.get("is_head_node") is True, _number(resources.get("GPU")), _numbers(resources))
    return None


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _numbers(resources) -> dict[str, float]:
    return {str(k): _number(v) for k, v in resources.items()} if isinstance(resources, dict) else {}


@parser
def parse_nodes(text: str) -> list[RayNode]:
    start = text.find("[")
    try:
        data = json.JSONDecoder().raw_decode(text[start:])[0] if start >= 0 else None  # ray.init's log lines may follow
    except ValueError:
        data = None
    if not isinstance(data, list):
        raise ParseError("ray_nodes", "a JSON list of nodes (ray.nodes(), or ray list nodes --format json)", text)
    nodes = [n for d in data if isinstance(d, dict) and (n := _node(d)) is not None]
    if data and not nodes:
        raise ParseError("ray_nodes", "nodes with NodeManagerAddress (ray.nodes()) or node_ip (ray list nodes)", text)
    return nodes
