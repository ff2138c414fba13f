"""What the simulated cluster looks like: node names, addresses, and the cluster file for it."""

import os
from dataclasses import dataclass, field

from . import image, provision
from .provision import MODEL_REPO


def instance() -> int:
    """Which simulated cluster this process works on: $GB10CHECK_SIM_INSTANCE, a digit, 0 when unset. Two instances can
    be up side by side on one machine (the self-tests run one per xdist worker): every name `up` makes on this machine
    (namespaces, links, cgroups, the state folder) and the management subnet carry it. Node names and QSFP addresses
    are the same in every instance: each node is its own namespaces."""
    raw = os.environ.get("GB10CHECK_SIM_INSTANCE") or "0"
    if len(raw) != 1 or not raw.isdigit():
        raise ValueError(f"GB10CHECK_SIM_INSTANCE={raw!r}: expected one digit, 0 to 9")
    return int(raw)


def prefix() -> str:
    """What every name this instance makes on the machine starts with: gb10sim- (instance 0), gb10sim1- ..."""
    return f"gb10sim{instance() or ''}-"


def mgmt_net() -> str:
    """The management subnet's first three octets: 198.18.<instance> (RFC 2544 benchmarking range: never routed, never
    anyone's LAN)."""
    return f"198.18.{instance()}"


def mgmt_bridge() -> str:
    return prefix() + "br"


def mgmt_ip(rank: int) -> str:
    """The management address of the node of this rank: 198.18.<instance>.<10 + rank>."""
    return f"{mgmt_net()}.{10 + rank}"


USER = "lenovo"
USER_DRIVER = "580.173.02"
INDUCTOR_CACHE = "/tmp/torchinductor_root"  # TorchInductor's own place for root: the runner's, shared (sim/provision.py)

# (netdev, rdma device) of a GB10's ConnectX-7: two ports, each seen as two logical links.
CABLED = [("enp1s0f0np0", "rocep1s0f0"), ("enP2p1s0f0np0", "roceP2p1s0f0")]
UNCABLED = [("enp1s0f1np1", "rocep1s0f1"), ("enP2p1s0f1np1", "roceP2p1s0f1")]


@dataclass
class SimLink:
    netdev: str
    rdma_device: str
    address: str  # with prefix


@dataclass
class SimNode:
    name: str
    rank: int
    mgmt_ip: str
    links: list[SimLink] = field(default_factory=list)

    @property
    def netns(self) -> str:
        return prefix() + self.name


def pair_or_switch(n: int) -> list[SimNode]:
    """n == 2: the field report's pair and its exact addresses; n > 2: nodes behind a switch."""
    if not 2 <= n <= 8:
        raise ValueError("the simulated cluster has 2 to 8 nodes")
    nodes = []
    for i in range(n):
        if n == 2:
            a0 = ["169.254.94.252/16", "169.254.159.206/16"][i]
        else:
            a0 = f"169.254.100.{10 + i}/16"
        a1 = f"192.168.101.{10 + i}/24"
        nodes.append(SimNode(f"thinkstationpgx-{30 + 2 * i}", i, mgmt_ip(i),
                             [SimLink(CABLED[0][0], CABLED[0][1], a0), SimLink(CABLED[1][0], CABLED[1][1], a1)]))
    return nodes


def ring(n: int) -> list[SimNode]:
    """n >= 3 nodes wired as NVIDIA wires a ring: node i's port 0 (both logical links, CABLED) to node i+1's port 1
    (UNCABLED's names: cabled here), one /24 per logical link of each cable, all inside the firewall's 169.254.0.0/16."""
    if not 3 <= n <= 8:
        raise ValueError("the simulated ring has 3 to 8 nodes")
    nodes = [SimNode(f"thinkstationpgx-{30 + 2 * i}", i, mgmt_ip(i)) for i in range(n)]
    for i, node in enumerate(nodes):
        prev = (i - 1) % n
        node.links = [SimLink(dev, rdma, f"169.254.{10 + 2 * i + j}.1/24") for j, (dev, rdma) in enumerate(CABLED)] + \
                     [SimLink(dev, rdma, f"169.254.{10 + 2 * prev + j}.2/24") for j, (dev, rdma) in enumerate(UNCABLED)]
    return nodes


TOPOLOGIES = ("pair", "ring", "switch")


def build(n: int, topology: str | None = None) -> tuple[list[SimNode], str]:
    """The nodes of a simulated cluster and its topology: a pair for 2 nodes, else the ring or the switch asked for."""
    topology = topology or ("pair" if n == 2 else "switch")
    if topology not in TOPOLOGIES:
        raise ValueError(f"unknown topology {topology!r}: one of {', '.join(TOPOLOGIES)}")
    if (topology == "pair") != (n == 2):
        raise ValueError(f"a pair has 2 nodes, a ring or a switch 3 or more; asked: {topology} of {n}")
    return (ring(n) if topology == "ring" else pair_or_switch(n)), topology


def cables(nodes: list[SimNode], topology: str) -> list[tuple[tuple[int, str], tuple[int, str]]]:
    """The direct cables, one per logical link: ((rank, netdev), (rank, netdev)); a switch has none (its bridges)."""
    if topology == "pair":
        a, b = nodes
        return [((a.rank, la.netdev), (b.rank, lb.netdev)) for la, lb in zip(a.links, b.links)]
    if topology == "ring":
        n = len(nodes)
        return [((i, dev), ((i + 1) % n, far)) for i in range(n) for (dev, _), (far, _) in zip(CABLED, UNCABLED)]
    return []


EXECUTORS = ("mp", "ray")


def cluster_yaml(nodes: list[SimNode], state_dir: str, ssh_port: int = 22, executor: str = "mp",
                 topology: str | None = None) -> str:
    """The cluster file for the simulation: the seed's deployment, sized for this machine. executor "ray": NVIDIA's
    two-node playbook (a Ray head and workers; docs/ray.md) instead of the field report's mp."""
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}: one of {', '.join(EXECUTORS)}")
    import yaml

    doc = {
        "name": "gb10sim",
        "ssh": {"user": USER, "port": ssh_port, "identity_file": f"{state_dir}/runner_ed25519",
                "known_hosts": f"{state_dir}/known_hosts",
                "cluster_key": f"{state_dir}/shared_ed25519", "connect_timeout_s": 5, "command_timeout_s": 60},
        **({"topology": topology} if topology and len(nodes) > 2 else {}),
        "nodes": [{"name": n.name, "address": n.mgmt_ip, "rank": n.rank,
                   "links": [{"netdev": l.netdev, "rdma_device": l.rdma_device, "address": l.address} for l in n.links]}
                  for n in nodes],
        # The simulation's hardware figures (its stand-ins answer as GB10s, its compute canary and disk reads included),
        # each with its source: gb10check/profiles/sim.yaml.
        "expect": {"profile": "sim", "firewall": {"sources": ["169.254.0.0/16", "192.168.101.0/24"], "ports": ["20001/tcp"]}},
        "deploy": {"workdir": f"/home/{USER}/vllm", "compose_file": "compose.yml", "image": image.NAME,
                   # The real small model the simulated head serves (see sim/provision.py), sized for 2 CPU cores.
                   "model_id": MODEL_REPO, "served_model_name": "smollm2-135m",
                   "tensor_parallel_size": len(nodes), "max_model_len": 8192, "max_num_seqs": 4,
                   "gpu_memory_utilization": 0.8, "container_memory_limit": "105G", "master_port": 29501, "api_port": 20001,
                   "hf_cache": f"/home/{USER}/vllm/huggingface", "reasoning_parser": "qwen3", "tool_call_parser": "hermes",
                   # CPU only: skip the minute of torch.compile warm-up (the GB10 profile uses -cc.mode=0 for the same reason).
                   "extra_args": ["--enforce-eager"],
                   # The image is a skeleton (sim/image.py): Python, the vLLM install and its venv come from the node.
                   "extra_volumes": [*(f"{p}:{p}:ro" for p in dict.fromkeys(
                       ["/usr", "/etc/alternatives", str(provision.base_python_prefix()), str(provision.venv())])),
                       f"{provision.inductor_cache()}:{INDUCTOR_CACHE}"],  # the kernels TP=2 compiles, kept
                   # One core per rank (the box has two); a 1 GiB KV cache; the model is local.
                   "extra_environment": {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
                                         "VLLM_CPU_OMP_THREADS_BIND": "${NODE_RANK}"},
                   # Neither exists on the machine the simulation runs on: no RDMA device, no CAP_SYS_RESOURCE.
                   "map_infiniband": False, "memlock_unlimited": False,
                   # Ray counts GPUs through NVML, which this machine lacks: each node declares its stand-in GB10.
                   **({"executor": "ray", "ray": {"num_gpus": 1}} if executor == "ray" else {})},
        # One stream of SmolLM2-135M: about 18 tok/s on the head alone (TP=1), about 7 tok/s with TP=2 across
        # the pair (the all-reduce over the link dominates, as on GB10); 5 catches a throttled server.
        # 128 tokens a throughput run: the small model never stops counting, and 400 at ~15 tok/s on 2 cores is 27 s a run.
        # 16 tokens a sweep stream: the sweep's levels 1, 2 and 4 (max_num_seqs) then cost seconds, not a minute.
        "serving": {"api_key_env": "GB10CHECK_API_KEY", "expect_reasoning": True, "expect_tool_calls": True, "min_decode_tok_s": 5,
                    "decode_max_tokens": 128, "sweep_max_tokens": 16},
        # A rehearsal's soak, sized for TP=2 of SmolLM2-135M across the pair on 2 CPU cores (measured there: prompt
        # processing about 40 tok/s, generation about 3 tok/s a stream): a minute of load with short prompts, a 30 s
        # stall limit, a "long" context of about 1000 tokens (0.12 of max_model_len 8192: 0.9 would prefill 170 s) with
        # the nonce at its end (where the small model finds it), and two shallow depths. A GB10 pair runs the defaults:
        # 30 minutes, 60 s, 0.9 of max_model_len, up to 16384 tokens deep.
        "soak": {"duration_s": 60, "stall_limit_s": 30, "prompt_tokens": [16, 64, 128], "max_tokens": 32,
                 "long_context_fraction": 0.12, "nonce_placement": "end", "prefill_limit_s": 300, "depths": [0, 512],
                 "depth_prompt_tokens": 128, "depth_gen_tokens": 16, "depth_runs": 1},
        # A watch tick's one request on the same two shared cores: its first token within the soak's stall limit, no gap
        # over 5 s (one stream decodes about 7 tok/s alone, about 1 tok/s beside CI's other work). A GB10 pair: 10 s, 1 s.
        "watch": {"ttft_budget_s": 30, "itl_budget_ms": 5000},
    }
    return "# Written by `gb10check sim up`: the simulated cluster.\n" + yaml.safe_dump(doc, sort_keys=False)
