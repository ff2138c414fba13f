"""The Ray path (deploy.executor: ray): NVIDIA's two-node playbook checked the way the mp path is.

Pure judges, facts and the cluster in, findings out:
- `judge_version`, `judge_version_same`: Ray in the image (the CLI the Ray service runs and the module vLLM imports),
  the same version on every node;
- `judge_start_args`, `judge_memory_monitor`: the compose file's Ray design (rank 0 the head at its QSFP address,
  the others workers of rank 0's GCS at theirs, every cross-node port pinned, the memory monitor off);
- `judge_ports`: ufw lets the other nodes reach this node's Ray ports from the QSFP subnets;
- `judge_names`: the head's interface and RDMA device names exist here (vLLM copies the head's variables to workers);
- `judge_status`, `judge_node`: after `ray start`, `ray status` counts every node and every GPU, and each node
  registered at its own QSFP address (not its LAN or Wi-Fi address).
"""

import ipaddress

from .. import compose
from ..cluster import Cluster, Node
from ..facts.ip import Interface
from ..facts.rdma import IbPort
from ..facts.ray import RayNode, RayStatus, RayVersion
from ..facts.ufw import UfwStatus
from ..remedies import Code
from ..verdict import Finding

RAY_STATUS = f"docker exec {compose.RAY_CONTAINER_NAME} ray status"


def gpus_needed(cluster: Cluster) -> int:
    """One GPU per tensor-parallel rank (a GB10 has one)."""
    return cluster.deploy.tensor_parallel_size


def gcs_address(cluster: Cluster, node: Node) -> str:
    """The head's GCS as `node` reaches it."""
    return f"{cluster.rendezvous_addr(node)}:{cluster.deploy.ray.port}"


# ---- the image ---------------------------------------------------------------------------------


def judge_version(node: str, image: str, found: RayVersion) -> list[Finding]:
    """Ray's CLI (what the Ray service runs) and its module (what vLLM imports) are in the image."""
    if found.cli and found.module:
        return []
    missing = [what for what, have in (("the `ray` command", found.cli), ("the `ray` Python module", found.module)) if not have]
    said = "; ".join(found.errors) or "no version printed"
    return [Finding(Code.RAY_MISSING, node, f"{' and '.join(missing)} not in {image} ({said})",
                    "Ray in the image: `ray --version` and `import ray` (the Ray service runs `ray start`)", image=image)]


def judge_version_same(node: str, head: str, mine: RayVersion, heads: RayVersion) -> list[Finding]:
    if mine.version is None or heads.version is None or mine.version == heads.version:
        return []  # a missing Ray is test_ray_in_image's finding
    return [Finding(Code.RAY_VERSION_DIFFERS, node, f"Ray {mine.version}", f"Ray {heads.version} as on {head}", head=head)]


# ---- the compose file's Ray design ---------------------------------------------------------------


def judge_memory_monitor(where: str, node: str, environment: dict[str, str]) -> list[Finding]:
    value = environment.get("RAY_memory_monitor_refresh_ms")
    if value is not None and value.strip() == "0":
        return []
    seen = f"RAY_memory_monitor_refresh_ms={value}" if value is not None else "no RAY_memory_monitor_refresh_ms"
    return [Finding(Code.RAY_MEMORY_MONITOR, where, seen + " (Ray's memory monitor on)",
                    "RAY_memory_monitor_refresh_ms=0 (the monitor off)", node=node)]


def judge_start_args(cluster: Cluster, node: Node, where: str, args: list[str] | None, rank_from_env: bool,
                     env_file: dict[str, str]) -> list[Finding]:
    """`ray start` as the service's command gives it (a dry run with a stub `ray`): the role by rank, the node's own
    QSFP address, the head's GCS, --block, and every port pinned as deploy.ray says."""
    f: list[Finding] = []

    def bad(code, seen, expected, **kw):
        f.append(Finding(code, where, seen, expected, node=node.name, **kw))

    r = cluster.deploy.ray
    gcs = gcs_address(cluster, node)
    if args is None or not args or args[0] != "start":
        bad(Code.COMPOSE_NO_VLLM, "the command never runs `ray start` (dry run with a stub ray)", "ray start --block ...")
        return f
    head = "--head" in args
    if rank_from_env and node.rank == 0 and not head:
        bad(Code.COMPOSE_RAY_ROLE, f"rank 0 starts `ray {' '.join(args[:3])} ...` without --head", "rank 0 runs the Ray head",
            port=str(r.port), gcs=gcs)
    elif rank_from_env and node.rank != 0 and head:
        bad(Code.COMPOSE_RAY_ROLE, f"rank {node.rank} starts a second Ray head (--head)", f"a Ray worker of {gcs}",
            port=str(r.port), gcs=gcs)
    if "--block" not in args:
        bad(Code.COMPOSE_ARG, "ray start without --block (the container ends as soon as Ray is started)", "--block",
            arg="--block", value="")
    own = {link.ip for link in node.links}
    ip = compose.flag(args, "--node-ip-address")
    if ip not in own and not compose.from_env_file(env_file, "VLLM_HOST_IP", ip):
        bad(Code.COMPOSE_ARG, f"--node-ip-address {ip}" if ip else "no --node-ip-address (Ray picks an address itself: the LAN "
            "or Wi-Fi one on a GB10)", f"--node-ip-address {node.links[0].ip} (its QSFP address)", arg="--node-ip-address",
            value=node.links[0].ip)
    expected = {f"--{k.replace('_', '-')}": str(getattr(r, k)) for k in (
        "node_manager_port", "object_manager_port", "runtime_env_agent_port", "dashboard_agent_grpc_port",
        "dashboard_agent_listen_port", "metrics_export_port", "min_worker_port", "max_worker_port")}
    if head:
        expected["--port"] = str(r.port)
    elif rank_from_env and node.rank != 0:
        expected["--address"] = gcs
    for name, want in expected.items():
        have = compose.flag(args, name)
        if have != want:
            bad(Code.COMPOSE_ARG, f"{name} {have}" if have is not None else f"no {name} (a random port ufw cannot allow)",
                f"{name} {want}", arg=name, value=want)
    return f


def judge_serve_args(cluster: Cluster, node: Node, where: str, args: list[str] | None) -> list[Finding]:
    """`vllm serve` in the Ray service's x-gb10check-serve (run in rank 0's container): the Ray executor and the model's
    settings; none of the mp executor's --headless/--nnodes (Ray places the workers)."""
    d = cluster.deploy
    if args is None:
        return [Finding(Code.COMPOSE_NO_VLLM, where, f"no `vllm serve` in {compose.SERVE_FIELD} (dry run with a stub vllm)",
                        "the serve script that runs in rank 0's Ray container", node=node.name)]
    f = []
    expected = {"--distributed-executor-backend": "ray", "--tensor-parallel-size": str(d.tensor_parallel_size),
                "--max-model-len": str(d.max_model_len), "--served-model-name": d.served_model_name, "--port": str(d.api_port)}
    for name, want in expected.items():
        have = compose.flag(args, name)
        if have != want:
            f.append(Finding(Code.COMPOSE_ARG, where, f"{name} {have}" if have is not None else f"no {name}", f"{name} {want}",
                             node=node.name, arg=name, value=want))
    for mp_only in ("--headless", "--nnodes", "--node-rank"):
        if any(a == mp_only or a.startswith(mp_only + "=") for a in args):
            f.append(Finding(Code.COMPOSE_ARG, where, f"{mp_only} (the mp executor's) in the Ray serve script",
                             f"no {mp_only}: Ray places one worker per GPU", node=node.name, arg=mp_only, value="(remove it)"))
    return f


# ---- the hosts -----------------------------------------------------------------------------------


def cross_node_ports(cluster: Cluster, node: Node) -> list[tuple[int, str]]:
    """(port, what) the other nodes connect to on this node: the GCS on the head, the node and object managers, the
    worker range (both ends, as ufw rules cover ranges)."""
    r = cluster.deploy.ray
    named = {"port": "GCS (ray start --port)", "node_manager_port": "node manager", "object_manager_port": "object manager"}
    ports = [(p, named[k]) for k, p in r.cross_node_ports(head=node.rank == 0).items()]
    return ports + [(r.min_worker_port, f"worker ports {r.min_worker_port}-{r.max_worker_port}"),
                    (r.max_worker_port, f"worker ports {r.min_worker_port}-{r.max_worker_port}")]


def _source(cluster: Cluster, ip: str, network: ipaddress.IPv4Network) -> str:
    return next((str(s) for s in cluster.expect.firewall.sources if ipaddress.ip_address(ip) in s), str(network))


def judge_ports(cluster: Cluster, node: Node, status: UfwStatus) -> list[Finding]:
    """With ufw active: each QSFP subnet the node's peers come from is allowed to this node's Ray ports."""
    if not status.active:
        return []
    f = []
    for link in node.links:
        source = _source(cluster, link.ip, link.address.network)
        for port, what in cross_node_ports(cluster, node):
            if not status.allows(source, port, "tcp", netdevs={l.netdev for l in node.links}):
                f.append(Finding(Code.RAY_PORT_NOT_ALLOWED, f"{node.name}:{link.netdev}", f"ufw active (default "
                                 f"{status.default_incoming or '?'} incoming), no rule allowing {source} to {port}/tcp",
                                 f"{port}/tcp ({what}) allowed from {source}", node=node.name, source=source, port=port,
                                 what=what))
    return f


def judge_names(cluster: Cluster, node: Node, ifaces: list[Interface], ports: list[IbPort]) -> list[Finding]:
    """The head's first netdev (NCCL/GLOO/UCX/TP_SOCKET_IFNAME) holds this node's own QSFP address here, and the head's
    RDMA devices (NCCL_IB_HCA) are here and ACTIVE: vLLM copies the head's variables to every Ray worker."""
    head = cluster.head
    netdev = head.links[0].netdev
    hcas = [link.rdma_device for link in head.links if link.rdma_device]
    own = {link.ip for link in node.links}
    by_name = {i.name: i for i in ifaces}
    iface = by_name.get(netdev)
    problems = []
    if iface is None:
        problems.append(f"no interface {netdev}")
    elif not any(str(ipaddress.ip_interface(a).ip) in own for a in iface.ipv4):
        problems.append(f"{netdev} holds {', '.join(iface.ipv4) or 'no IPv4 address'}, not one of {', '.join(sorted(own))}")
    active = {p.rdma_device for p in ports if p.port_state == "ACTIVE"}
    for hca in hcas:
        if hca not in active:
            present = any(p.rdma_device == hca for p in ports)
            problems.append(f"RDMA device {hca} {'not ACTIVE' if present else 'absent'}")
    if not problems:
        return []
    names = ", ".join([netdev, *hcas])
    return [Finding(Code.RAY_NAMES_DIFFER, node.name, "; ".join(problems), f"the names {head.name} uses ({names}) with this "
                    "node's own QSFP address and ACTIVE devices", head=head.name, names=names, netdev=netdev)]


# ---- the running Ray cluster ---------------------------------------------------------------------


def judge_status(cluster: Cluster, head: str, status: RayStatus) -> list[Finding]:
    """`ray status` on the head (the playbook's step 6): every node active, every GPU there; a pending demand pinned to
    an address that is no node's QSFP address names the node that registered elsewhere."""
    if not status.ready:
        return [Finding(Code.COMMAND_FAILED, head, "`ray status` says: No cluster status (Ray's services still starting)",
                        "the autoscaler's summary", command=RAY_STATUS)]
    f = []
    n = len(cluster.nodes)
    if status.nodes < n:
        f.append(Finding(Code.RAY_NODE_MISSING, head, f"ray status: {status.nodes} active node(s)",
                         f"{n} (one per node of the cluster file)", gcs=gcs_address(cluster, cluster.head)))
    gpus, need = status.total("GPU"), gpus_needed(cluster)
    if gpus is None or gpus < need:
        f.append(Finding(Code.RAY_GPUS, head, f"ray status: {gpus if gpus is not None else 'no'} GPU in the cluster",
                         f"{need} GPUs (--tensor-parallel-size {need})", gpus=need))
    qsfp = {link.ip for node in cluster.nodes for link in node.links}
    for address in status.demanded_node_addresses:
        if address not in qsfp:
            owner = next((nd for nd in cluster.nodes if nd.address == address), None)
            f.append(Finding(Code.RAY_NODE_ADDRESS, owner.name if owner else head,
                             f"a pending placement group pinned to node:{address}"
                             + (f" ({owner.name}'s management address)" if owner else " (no node's QSFP address)"),
                             "every node at its QSFP address", node=owner.name if owner else head,
                             address=owner.links[0].ip if owner else "ITS_QSFP_ADDRESS"))
    return f


def match(cluster: Cluster, node: Node, ray_nodes: list[RayNode]) -> tuple[RayNode | None, RayNode | None]:
    """(the alive Ray node at one of this node's QSFP addresses, or None; the alive Ray node that is this machine at
    another address, by its management address or host name, or None)."""
    alive = [r for r in ray_nodes if r.alive]
    own = {link.ip for link in node.links}
    at_qsfp = next((r for r in alive if r.address in own), None)
    qsfp = {link.ip for n in cluster.nodes for link in n.links}
    elsewhere = next((r for r in alive if r.address not in qsfp and (r.address == node.address or r.hostname == node.name)),
                     None)
    return at_qsfp, elsewhere


def judge_node(cluster: Cluster, node: Node, ray_nodes: list[RayNode]) -> list[Finding]:
    """This node is in the Ray cluster, alive, at its own QSFP address, with a GPU."""
    at_qsfp, elsewhere = match(cluster, node, ray_nodes)
    want = node.links[0].ip
    if at_qsfp is None and elsewhere is not None:
        return [Finding(Code.RAY_NODE_ADDRESS, node.name, f"registered with Ray at {elsewhere.address} (host "
                        f"{elsewhere.hostname or '?'}, node {elsewhere.node_id[:12]})", f"its QSFP address {want}",
                        address=want)]
    if at_qsfp is None:
        strays = [r for r in ray_nodes if r.alive and r.address not in {link.ip for n in cluster.nodes for link in n.links}]
        dead = [r for r in ray_nodes if not r.alive and r.address in {link.ip for link in node.links}]
        seen = "no alive Ray node at " + ", ".join(link.ip for link in node.links)
        if dead:
            seen += f" (one there died: node {dead[0].node_id[:12]})"
        if strays:
            seen += "; alive at other addresses: " + ", ".join(f"{r.address} (host {r.hostname or '?'})" for r in strays)
        return [Finding(Code.RAY_NODE_MISSING, node.name, seen, f"a Ray {'head' if node.rank == 0 else 'worker'} at {want}",
                        gcs=gcs_address(cluster, node))]
    if at_qsfp.gpus < 1:
        return [Finding(Code.RAY_GPUS, node.name, f"the Ray node at {at_qsfp.address} has {at_qsfp.gpus:g} GPU",
                        "1 GPU (the GB10's)", gpus=gpus_needed(cluster))]
    return []
