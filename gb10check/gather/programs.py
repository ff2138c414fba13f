"""Programs run on the nodes once per run, beside the facts' batch: the canaries (ours, shipped in gb10check/canary/, fed
to the image's python3), the compute timing run on every node at once, the shard read, the compose dry run, the Ray
head's views, the clock, ib_write_bw and nccl-tests. Each answers a value or stops its check as NOT CHECKED."""

import base64
import contextlib
import json
import re
import shlex
import time
from dataclasses import dataclass
from typing import Any

from .. import canary, compose, facts
from ..checks.gpu import compute_rate
from ..cluster import Cluster
from ..remedies import Code
from ..remote import RemoteError, RemoteNode
from ..verdict import Finding, not_checked, report
from .batch import TIMED_OUT, Output, Unreadable
from .commands import shard_read
from .shared import port_lock

def _unfinished(node: RemoteNode, out: Output) -> None:
    """A command that timed out or failed to run: NOT CHECKED, with the command."""
    if out.rc == TIMED_OUT:
        not_checked(Code.COMMAND_TIMEOUT, node.name, f"`{out.command}` did not finish in time", "the command to complete",
                    command=out.command)
    detail = (out.stderr or out.stdout).strip().splitlines()
    not_checked(Code.COMMAND_FAILED, node.name, f"`{out.command}` exited {out.rc}: {detail[-1] if detail else 'no output'}",
                "the command to succeed", command=out.command)


def parsed_output(node: RemoteNode, kind: str, out: Output, ok_codes: tuple[int, ...] = (0,)) -> Any:
    """An output already had (a command run once per run) read as `parsed` reads one: NOT CHECKED when unreadable."""
    command = out.command
    if out.rc == TIMED_OUT:
        _unfinished(node, out)
    body = out.stdout + (out.stderr if out.rc not in ok_codes else "")
    try:
        return facts.parse(kind, body)
    except facts.ParseError as exc:
        if out.rc not in ok_codes:  # the command itself failed (missing tool, sudo refused): say that, not "garbled"
            _unfinished(node, out)
        report([Finding(Code.GARBLED, node.name, f"{exc} (exit {out.rc})", f"{facts.KINDS[kind].what} output",
                        command=command, kind=kind)])


def parse_or_error(kind: str, text: str) -> tuple[Any, str | None]:
    """(facts, None), or (None, why) when the text is not that tool's output: for runs whose unreadable output is a finding."""
    try:
        return facts.parse(kind, text), None
    except facts.ParseError as exc:
        return None, str(exc)

@dataclass
class DryRun:
    """The service's command run on the node with a stub `vllm`: the arguments vllm would get, or None."""

    command: str
    rc: int
    args: list[str] | None
    output: str

    @property
    def could_not_run(self) -> bool:
        return self.args is None and self.rc in compose.DRY_RUN_CANNOT_RUN


def compose_dry_run(node: RemoteNode, service: dict, program: str = "vllm", once: bool = False) -> DryRun | None:
    """Run the (interpolated) service's command on the node itself, never on the runner; None if it has no command.
    once: as a check runs it, once per run (recorded with the run's programs); else live, as the deploy runs it."""
    command = compose.dry_run_command(service, program=program)
    if command is None:
        return None
    timeout = compose.DRY_RUN_TIMEOUT_S + 10
    out = node.fleet.once(node.name, command, timeout) if once else node.run(command, timeout=timeout)
    return DryRun(command, out.rc, compose.parse_dry_run(out.stdout), (out.stdout + out.stderr).strip())


def vllm_args(node: RemoteNode, service: dict, program: str = "vllm") -> list[str] | None:
    """The arguments the service's command gives `vllm` (or `ray`) on this node; NOT CHECKED if the dry run could not run."""
    dry = compose_dry_run(node, service, program, once=True)
    if dry is not None and dry.could_not_run:
        shown = " ".join(str(a) for a in [*(service.get("entrypoint") or []), *(service.get("command") or [])])[:200]
        not_checked(Code.DRY_RUN_FAILED, node.name, f"the dry run exited {dry.rc}: {dry.output[-200:] or 'no output'}",
                    f"the service's command to reach `{program}` within the dry run's time", command=shown)
    return dry.args if dry else None


def ray_head_output(head: RemoteNode, command: str) -> Output | None:
    """`command` (RAY_STATUS, RAY_NODES) in rank 0's Ray container, once per run (read it with `parsed_output`); None when
    no Ray container runs there (Ray not started yet: these checks are for after `ray start`)."""
    out = head.fleet.once(head.name, command, max(head.fleet.cluster.ssh.command_timeout_s, 60))
    said = out.stdout + out.stderr
    if out.rc != 0 and ("No such container" in said or "is not running" in said):
        return None
    return out


def service_args(node: RemoteNode, cluster: Cluster, service: dict | None) -> tuple[list[str] | None, list[str] | None]:
    """(what `vllm` gets, what `ray` gets) from the (interpolated) service, each by a dry run on the node: for mp the
    command's vllm and no ray; for Ray the serve script's vllm (x-gb10check-serve) and the command's `ray start`."""
    if service is None:
        return None, None
    if not cluster.uses_ray:
        return vllm_args(node, service), None
    serve = compose.serve_service(service)
    return (vllm_args(node, serve) if serve else None), vllm_args(node, service, program="ray")


# ---- canary programs: ours, shipped in gb10check/canary/, fed to the image's python3 (or deploy.canary_python) -------

SMI_SAMPLE = ("nvidia-smi -i 0 --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active "
              "--format=csv,noheader,nounits -lms 500")
SAMPLES_MARK = "--- gb10check: nvidia-smi samples ---"


def program(cluster: Cluster, name: str, *args: str, gpus: bool = True) -> tuple[str, str]:
    """(command, what to show for it): the program's text travels base64-encoded inside the command and is fed to the
    image's python3 on stdin (`docker run -i`), or to deploy.canary_python on the node."""
    d = cluster.deploy
    encoded = base64.b64encode(canary.source(name).encode()).decode()
    tail = " ".join(shlex.quote(a) for a in ("-", *args))
    if d.canary_python:
        runner = f"{shlex.quote(d.canary_python)} {tail}"
    else:
        volumes = "".join(f" -v {shlex.quote(v)}" for v in d.extra_volumes)
        runner = f"docker run --rm -i --pull never{' --gpus all' if gpus else ''}{volumes} {shlex.quote(d.image)} python3 {tail}"
    return f"echo {encoded} | base64 -d | {runner}", f"{runner} < gb10check/canary/{name}.py"


def compute_command(cluster: Cluster) -> tuple[str, str]:
    """The matmul timing program with nvidia-smi sampling GPU 0 every 500 ms in the background while it runs."""
    run, shown = program(cluster, "matmul", "--seconds", f"{cluster.expect.compute_seconds:g}")
    command = (f'd=$(mktemp -d) || exit 1; {SMI_SAMPLE} >"$d/smi" 2>&1 & s=$!; {run}; rc=$?; kill $s 2>/dev/null; '
               f"wait $s 2>/dev/null; echo '{SAMPLES_MARK}'; echo '$ {SMI_SAMPLE}'; cat \"$d/smi\"; rm -rf \"$d\"; exit $rc")
    return command, f"{shown} (with `{SMI_SAMPLE}` in the background)"


def program_json(out: Output) -> dict:
    """The program's JSON line (before nvidia-smi's samples, where it has them); Unreadable if it printed none."""
    shown = out.command
    lines = out.stdout.split(SAMPLES_MARK)[0].splitlines()
    for line in reversed(lines):
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except ValueError:
                break
            if isinstance(found, dict) and found.get("error"):
                raise Unreadable(f"`{shown}` exited {out.rc}: {found['error'][:300]}", Code.COMMAND_FAILED, "the program to run")
            if isinstance(found, dict):
                return found
            break
    if out.rc == TIMED_OUT:
        raise Unreadable(f"`{shown}` did not finish in time", Code.COMMAND_TIMEOUT, "the command to complete")
    detail = (out.stderr or out.stdout.split(SAMPLES_MARK)[0]).strip().splitlines()
    raise Unreadable(f"`{shown}` exited {out.rc} without its JSON line: {detail[-1][:300] if detail else 'no output'}",
                     Code.COMMAND_FAILED, "the program's JSON line")


def _program_json(node: RemoteNode, out: Output, shown: str) -> dict:
    """The program's JSON line; NOT CHECKED (with the command as shown and its last lines) if it printed none."""
    try:
        return program_json(Output(shown, out.rc, out.stdout, out.stderr))
    except Unreadable as exc:
        not_checked(exc.code, node.name, exc.why, exc.expected, command=shown)


def canary_timeout(cluster: Cluster, name: str) -> float:
    return max(cluster.ssh.command_timeout_s, {"nccl": 120, "kernels": 180, "memory": 120}[name])


@dataclass
class ComputeRun:
    result: dict  # the matmul program's JSON line
    samples: list[dict] | None  # nvidia_smi_query rows of GPU 0 while it ran; None: sampling gave none
    samples_error: str | None  # why there are none (nvidia-smi's own words)


def _compute_of(node: RemoteNode, out: Output, shown: str) -> ComputeRun:
    result = _program_json(node, out, shown)
    samples_text = out.stdout.split(SAMPLES_MARK, 1)[1] if SAMPLES_MARK in out.stdout else ""
    rows, why = parse_or_error("nvidia_smi_query", samples_text)
    if rows is None:
        body = [l for l in samples_text.splitlines() if l.strip() and not l.startswith("$ ")]
        why = body[0][:200] if body else "no samples"
    return ComputeRun(result, rows, why)


def compute_timeout(cluster: Cluster) -> float:
    return max(cluster.ssh.command_timeout_s, cluster.expect.compute_seconds + 180)


def compute(node: RemoteNode) -> ComputeRun:
    """This node's run of the timing program (every node runs it once per run, all nodes at the same time)."""
    cluster = node.fleet.cluster
    command, shown = compute_command(cluster)
    got = node.fleet.at_once(command, compute_timeout(cluster))[node.name]
    if isinstance(got, RemoteError):
        raise got
    return _compute_of(node, got, shown)


def fastest_compute(node: RemoteNode) -> tuple[str, float] | None:
    """(node, TFLOP/s) of the fastest node whose timing program gave a figure; None if none did."""
    cluster = node.fleet.cluster
    command, shown = compute_command(cluster)
    figures = []
    for name, out in node.fleet.at_once(command, compute_timeout(cluster)).items():
        if isinstance(out, Output):
            with contextlib.suppress(BaseException):
                figures.append((name, compute_rate(_compute_of(node.fleet.node(name), out, shown).result)))
    return max(figures, key=lambda f: f[1]) if figures else None


def shard_read_rate(node: RemoteNode) -> tuple[str | None, bool, float | None, str]:
    """(shard, direct I/O?, bytes/s, what dd said) of this node's bounded read of one model shard, once per run."""
    cluster = node.fleet.cluster
    out = node.fleet.once(node.name, shard_read(cluster), 150)
    shard = next((line[len("-- shard "):-3] for line in out.stdout.splitlines() if line.startswith("-- shard ")), None)
    run, why = parse_or_error("dd", out.stdout)
    return shard, "-- direct --" in out.stdout, run.bytes_per_s if run else None, why or ""


def own_shard_read_rate(node: RemoteNode) -> tuple[bool, float]:
    """(direct I/O?, bytes/s) of this node's shard read; NOT CHECKED when there is no shard or dd gave no rate."""
    shard, direct, rate, why = shard_read_rate(node)
    if shard is None:
        not_checked(Code.PREREQUISITE, node.name, f"no safetensors shard of {node.fleet.cluster.deploy.model_id} to read",
                    "a shard of the model on the node", check="test_model_artifacts")
    if rate is None:
        not_checked(Code.GARBLED, node.name, f"dd gave no rate reading {shard}: {why}", "dd's summary line",
                    command=f"dd if={shard} of=/dev/null bs=4M iflag=direct", kind="dd")
    return direct, rate


def peer_shard_read_rate(node: RemoteNode, name: str) -> tuple[str | None, bool, float | None, str] | None:
    """Another node's shard_read_rate for a comparison; None when that node could not be reached or read."""
    try:
        return shard_read_rate(node.fleet.node(name))
    except RemoteError:
        return None


def clock_offset(node: RemoteNode) -> tuple[float, float]:
    """(the node's clock minus the runner's, half the round trip): read live, after the connection is up (a gathered
    time would be stale, and the skew must not include the SSH handshake)."""
    node.output("true")
    before = time.time()
    remote = float(node.output("date +%s.%N"))
    after = time.time()
    return remote - (before + after) / 2, (after - before) / 2


def ib_write_bw(lp, expect) -> Output:
    """ib_write_bw's server on lp.b's link, its client on lp.a's over the link's device and GID: the client's output."""
    duration, gid = expect.ib_write_bw_duration_s, expect.roce_gid_index
    # One port per link of the server node: the links of one pair can run at once under xdist.
    port = expect.perftest_port + [l.netdev for l in lp.b.links].index(lp.b_link.netdev)
    log = f"/tmp/gb10check-ibw-{port}.log"
    with port_lock(lp.b.name, port):  # never two listeners on one node and port: another link's server, the probes
        lp.b.run(f"nohup timeout {duration + 60} ib_write_bw -d {shlex.quote(lp.b_link.rdma_device)} -x {gid} -p {port} "
                 f"-D {duration} -F --report_gbits > {log} 2>&1 &")
        try:
            for _ in range(30):  # the server prints its banner once it listens
                if "Waiting for client" in lp.b.run(f"cat {log}").stdout:
                    break
                time.sleep(0.1)
            out = lp.a.run(f"ib_write_bw -d {shlex.quote(lp.a_link.rdma_device)} -x {gid} -p {port} -D {duration} -F "
                           f"--report_gbits {lp.b_link.ip}", timeout=duration + 30)
        finally:
            lp.b.run(f"pkill -f 'ib_write_bw .*-p {port} ' || true")  # the server is always cleaned up
    return Output("ib_write_bw", out.rc, out.stdout, out.stderr)


NCCL_TOOLS = ("mpirun", "all_gather_perf")
NCCL_TESTS_ENV = re.compile(r"^NCCL_\w+$")


def _nccl_env(environment: dict[str, str], hcas: list[str], ifname: str | None, keep_hca: bool) -> dict[str, str]:
    """One rank's NCCL variables: its node's service's, with its own HCAs (exact names, `=`: all of them unless keep_hca
    and the service names its own) and, where given, its own interface for NCCL's sockets; NCCL_DEBUG at INFO for the
    channel lines."""
    own = {k: v for k, v in sorted(environment.items()) if NCCL_TESTS_ENV.match(k)}
    if hcas and not (keep_hca and own.get("NCCL_IB_HCA")):
        own["NCCL_IB_HCA"] = "=" + ",".join(hcas)
    if ifname:
        own["NCCL_SOCKET_IFNAME"] = ifname
    own["NCCL_DEBUG"] = "INFO"
    return own


def _mpirun(ranks: list[tuple[str, dict[str, str]]], size: str) -> str:
    """mpirun with one application context per rank (MPMD, `:`): its host and its own `env`."""
    return "mpirun " + " : ".join(
        f"-np 1 -H {host}:1 env {' '.join(shlex.quote(f'{k}={v}') for k, v in env.items())} all_gather_perf -b {size} -e {size} -f 2"
        for host, env in ranks)


def _missing_tools(cluster: Cluster, fleet, name: str) -> list[str]:
    return [tool for tool in NCCL_TOOLS if fleet.once(name, f"command -v {tool}", cluster.ssh.command_timeout_s).rc != 0]


def nccl_all_gather(cluster: Cluster, rank0: RemoteNode, environments: dict[str, dict[str, str]]
                    ) -> tuple[list[str], str, str, Output | None]:
    """(tools missing on rank 0, the HCA lists, the command, its output): nccl-tests' all_gather_perf across every node
    through mpirun from rank 0, one application context per rank, each with the NCCL variables of ITS node's service
    (environments: node name -> that node's interpolated service environment): the HCAs it serves with (its node's links'
    where its service names none), and, where rank 0 reaches it over a link, that link's address and interface
    (Cluster.reached_from_head: a ring's far node is reached by its management address and keeps its service's
    interface); no run when a tool is missing."""
    ranks, hcas = [], []
    head = cluster.head
    reached = {n.name: cluster.reached_from_head(n) for n in cluster.by_rank()}
    peer_nets = {link.address.network for name, (_, link) in reached.items() if name != head.name and link is not None}
    for node in cluster.by_rank():
        host, link = reached[node.name]
        if node.name == head.name:  # rank 0 listens on every link its peers reach it over
            ifname = ",".join(l.netdev for l in node.links if l.address.network in peer_nets)
        else:
            ifname = link.netdev if link is not None else None
        env = _nccl_env(environments.get(node.name, {}), [l.rdma_device for l in node.links if l.rdma_device], ifname or None,
                        keep_hca=True)
        hcas.append(f"{node.name}: {env.get('NCCL_IB_HCA', 'unset')}")
        ranks.append((host, env))
    command, hca = _mpirun(ranks, "1G"), "; ".join(hcas)
    missing = _missing_tools(cluster, rank0.fleet, rank0.name)
    if missing:
        return missing, hca, command, None
    return [], hca, command, rank0.fleet.once(rank0.name, command, 600)


def nccl_link_pair(cluster: Cluster, lp, environments: dict[str, dict[str, str]]) -> tuple[list[str], str, str, Output | None]:
    """(tools missing on lp.a, the HCAs, the command, its output): all_gather_perf between the two ends of ONE link pair,
    launched from lp.a: each rank with its node's service variables, only its own end's HCA and interface, reached over
    the link itself, so one weak link is not hidden in the all-node average; no run when a tool is missing."""
    ranks = [(link.ip, _nccl_env(environments.get(node.name, {}), [link.rdma_device] if link.rdma_device else [], link.netdev,
                                 keep_hca=False)) for node, link in ((lp.a, lp.a_link), (lp.b, lp.b_link))]
    hca = f"{lp.a.name}: {ranks[0][1].get('NCCL_IB_HCA', 'unset')}; {lp.b.name}: {ranks[1][1].get('NCCL_IB_HCA', 'unset')}"
    command = _mpirun(ranks, "1G")
    fleet = lp.a.fleet
    missing = _missing_tools(cluster, fleet, lp.a.name)
    if missing:
        return missing, hca, command, None
    return [], hca, command, fleet.once(lp.a.name, command, 600)


# ---- the collectives canary: one rank per node, in the image, each with its own node's environment -------------------

COLLECTIVES_PORT = 29533  # the canary's rendezvous on rank 0 (torch's TCP store), across the QSFP subnet
COLLECTIVES_TIMEOUT_S = 300
# What a rank takes from its own node's service environment: what steers NCCL, Gloo and the library it loads.
RANK_ENV = re.compile(r"^(?:NCCL_\w+|GLOO_\w+|TP_SOCKET_IFNAME|UCX_\w+|TORCH_NCCL_\w+|CUDA_VISIBLE_DEVICES|LD_PRELOAD|LD_LIBRARY_PATH)$")


def collectives_command(cluster: Cluster, node, env: dict[str, str]) -> tuple[str, str]:
    """(command, what to show) of one rank of the collectives canary: the image started as the service starts it (host
    network and IPC, the RDMA devices and unlimited memlock where the deployment maps them) with the NCCL/Gloo variables
    of THIS node's service, meeting rank 0 at the address this node reaches it by (Cluster.rendezvous_addr)."""
    d = cluster.deploy
    own = {k: v for k, v in sorted(env.items()) if RANK_ENV.match(k)}
    args = ("-", "--rank", str(node.rank), "--world", str(len(cluster.nodes)), "--master", cluster.rendezvous_addr(node),
            "--port", str(COLLECTIVES_PORT), "--timeout", "120")
    tail = " ".join(shlex.quote(a) for a in args)
    encoded = base64.b64encode(canary.source("collectives").encode()).decode()
    if d.canary_python:
        runner = " ".join(["env", *(shlex.quote(f"{k}={v}") for k, v in own.items()), shlex.quote(d.canary_python), tail])
    else:
        volumes = "".join(f" -v {shlex.quote(v)}" for v in d.extra_volumes)
        devices = " --device /dev/infiniband:/dev/infiniband" if d.map_infiniband else ""
        envs = "".join(f" -e {shlex.quote(f'{k}={v}')}" for k, v in own.items())
        memlock = " --ulimit memlock=-1" if d.memlock_unlimited else ""
        runner = (f"docker run --rm -i --pull never --gpus all --network host --ipc host{memlock} "
                  f"--cap-add IPC_LOCK{devices}{volumes}{envs} {shlex.quote(d.image)} python3 {tail}")
    return (f"echo {encoded} | base64 -d | timeout {COLLECTIVES_TIMEOUT_S} {runner}",
            f"{runner} < gb10check/canary/collectives.py")


def nccl_collectives(head: RemoteNode, environments: dict[str, dict[str, str]]) -> dict[str, tuple[str, Output | RemoteError]]:
    """node -> (the command as shown, its Output or RemoteError): the collectives canary on every node at once, each rank
    with its own node's service environment (environments: node name -> that node's interpolated service environment)."""
    cluster = head.fleet.cluster
    commands, shown = {}, {}
    for node in cluster.by_rank():
        commands[node.name], shown[node.name] = collectives_command(cluster, node, environments.get(node.name, {}))
    got = head.fleet.at_once(commands, COLLECTIVES_TIMEOUT_S + 30)
    return {name: (shown[name], out) for name, out in got.items()}
