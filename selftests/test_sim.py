"""The simulated cluster: up, SSH through the suite's remote layer, scenarios visible, down leaves nothing."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gb10check.cluster import load_cluster
from gb10check.remote import RemoteNode
from gb10check.sim import control, scenarios

from .conftest import read_capture
from .simbed import REPO, require_sim

pytestmark = pytest.mark.sim


def host_snapshot() -> dict:
    def lines(*argv):
        return sorted(subprocess.run(argv, capture_output=True, text=True).stdout.splitlines())

    return {
        "netns": lines("ip", "netns", "list"),
        "links": [l.split(":")[1].strip() for l in lines("ip", "-o", "link", "show")],
        "mounts": sorted(Path("/proc/self/mounts").read_text().splitlines()),
        "sim_processes": [l for l in lines("ps", "-eo", "args") if "gb10check/sim/boot.py" in l or "gb10sim" in l
                          or l.startswith(("dockerd", "containerd"))],
        "cgroups": sorted(str(p) for p in Path("/sys/fs/cgroup").glob("*/gb10sim-*")),
    }


@pytest.fixture(scope="module")
def sim():
    require_sim()
    control.down(quiet=True)
    before = host_snapshot()
    path = control.up(2, quiet=True)
    yield path, before
    control.down(quiet=True)


def test_nodes_answer_through_the_remote_layer(sim):
    path, _ = sim
    cluster = load_cluster(path)
    for spec in cluster.nodes:
        node = RemoteNode(spec, cluster.ssh)  # host keys verified against the sim's known_hosts
        assert node.output("hostname").strip() == spec.name
        assert node.output("id -un").strip() == "lenovo"
        assert node.output("sudo -n true; echo $?").strip() == "0"
        node.close()


def test_cluster_file_collects(sim):
    path, _ = sim
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", "-m", "preflight or network",
                           f"--cluster={path}"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "test_ssh_user[thinkstationpgx-32]" in proc.stdout


def test_nodes_are_isolated_and_have_no_default_route(sim):
    for name in control.nodes():
        assert control.node_exec(name, "ip route show default").stdout == ""
        assert control.node_exec(name, "cat /proc/sys/net/ipv4/ip_forward").stdout.strip() == "0"
        # own hostname, own /etc, own processes: PID 1 is the node's init
        assert control.node_exec(name, "hostname").stdout.strip() == name
        assert "boot.py" in control.node_exec(name, "cat /proc/1/cmdline | tr '\\0' ' '").stdout
    assert Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() == "0"


def test_qsfp_cable_carries_traffic(sim):
    a, b = control.nodes()
    assert control.node_exec(a, "ping -c 1 -W 2 -I enp1s0f0np0 169.254.159.206").returncode == 0
    assert control.node_exec(a, "ping -c 1 -W 2 -I enP2p1s0f0np0 192.168.101.11").returncode == 0


def test_standin_nvidia_smi_has_the_real_layout(sim):
    """Same lines, same widths, same column separators as a real GB10's nvidia-smi (values differ)."""
    ours = control.node_exec(control.nodes()[0], "nvidia-smi").stdout.splitlines()[1:]
    real = read_capture("nvidia_smi/gb10-580.159.03-with-processes-jethac.txt").splitlines()[1:]
    for mine, theirs in zip(ours[:11], real[:11]):
        assert len(mine) == len(theirs)
        assert [i for i, c in enumerate(mine) if c == "|"] == [i for i, c in enumerate(theirs) if c == "|"]


def test_standin_ibdev2netdev_matches_the_capture(sim):
    ours = control.node_exec(control.nodes()[0], "ibdev2netdev").stdout
    real = read_capture("ibdev2netdev/gb10-blog-port0-up.txt").split("\n", 1)[1]
    assert ours == real


# A plain command on the node shows each scenario took effect.
VISIBLE = {
    "driver-mismatch": (1, "nvidia-smi; cat /proc/driver/nvidia/version", "Driver/library version mismatch"),
    "driver-differs": (1, "nvidia-smi --query-gpu=driver_version --format=csv,noheader", "580.126.09"),
    "ufw-no-qsfp-rules": (1, "ufw status", "Status: active"),
    "ufw-not-persisted": (1, "iptables -S ufw-user-input | grep 169.254.0.0/16 && ! grep -q 169.254.0.0/16 /etc/ufw/user.rules && echo live-only", "live-only"),
    "link2-down": (1, "ibdev2netdev", "roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Down)"),
    "gid-moved": (1, "cat /sys/class/infiniband/rocep1s0f0/ports/1/gid_attrs/types/3 /sys/class/infiniband/rocep1s0f0/ports/1/gid_attrs/types/5", "IB/RoCE v1\nRoCE v2"),
    "low-bandwidth": (1, "cat /etc/gb10sim/state.json", '"bandwidth_gbps": 41.3'),
    "link-speed-100g": (1, "ethtool enp1s0f0np0", "Speed: 100000Mb/s"),
    "different-usernames": (1, "getent passwd nvidia; getent passwd lenovo || echo no-lenovo", "no-lenovo"),
    "ssh-not-passwordless": (1, "grep -c gb10sim-shared-cluster-key /home/nvidia/.ssh/authorized_keys /home/lenovo/.ssh/authorized_keys 2>/dev/null; true", ":0"),
    "netplan-644": (0, "stat -c %a /etc/netplan/40-cx7.yaml", "644"),
    "same-subnet": (0, "ip -br -4 addr show enP2p1s0f0np0", "169.254.94.253/16"),
    "healthy": (0, "ufw status", "Status: active"),
    "os-differs": (1, "grep PRETTY_NAME /etc/os-release", "Ubuntu 22.04.5 LTS"),
    "gpu-not-gb10": (1, "nvidia-smi -L", "NVIDIA GH200 480GB"),
    "mtu-mismatch": (1, "cat /sys/class/net/enp1s0f0np0/mtu", "9000"),
    "roce-mtu-stuck": (1, "ibv_devinfo -d rocep1s0f0 | grep active_mtu", "1024 (3)"),
    "bios-before-april-2026": (0, "cat /sys/class/dmi/id/bios_date", "01/20/2026"),
    "firmware-differs": (1, "ethtool -i enp1s0f0np0", "28.44.1036"),
    "pcie-gen5-x2": (1, "lspci -vv -s 0002:01:00.0 | grep LnkSta:", "Width x2 (downgraded)"),
    "compose-no-offline": (1, "grep -c HF_HUB_OFFLINE /home/lenovo/vllm/compose.yml", "0"),
    "compose-cache-not-mounted": (1, "grep -c /root/.triton /home/lenovo/vllm/compose.yml", "0"),
    "gpu-stuck-low-power": (1, "nvidia-smi -i 0 --query-gpu=clocks.sm,power.draw --format=csv,noheader", "801 MHz, 19.60 W"),
    "cpu-throttled": (1, "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us", "50000"),
    "rdma-port-errors": (1, "cat /sys/class/infiniband/rocep1s0f0/ports/1/counters/symbol_error", "12"),
    "reboot-pending": (1, "cat /var/run/reboot-required", "System restart required"),
    "driver-unheld": (1, "dpkg-query -W -f='${Package} ${Status}\\n' 'nvidia-driver-*'", "nvidia-driver-580-open install ok installed"),
    "default-route-qsfp": (1, "ip route show default", "dev enp1s0f0np0"),
    "netplan-missing-link": (0, "grep -c enP2p1s0f0np0 /etc/netplan/40-cx7.yaml", "0"),
    "nccl-absent": (0, "command -v mpirun all_gather_perf || echo none", "none"),
    "compose-differs": (1, "grep NCCL_DEBUG /home/lenovo/vllm/compose.yml", "NCCL_DEBUG: INFO"),
    "env-dup-rank": (1, "cat /home/lenovo/vllm/.env", "NODE_RANK=0"),
    "no-headless": (1, "grep -c 'args+=(--headless)' /home/lenovo/vllm/compose.yml", "0"),
    "cudagraph-hyphen": (0, "grep -o -- '-cc.cudagraph-mode' /home/lenovo/vllm/compose.yml", "-cc.cudagraph-mode"),
    "no-memory-limit": (0, "grep -c 'memory: 105G' /home/lenovo/vllm/compose.yml", "0"),
    "bf16-checkpoint": (1, "ls /home/lenovo/vllm/huggingface/hub/; grep model_id /run/gb10check-sim/cluster.yaml 2>/dev/null; "
                           "cat /home/lenovo/vllm/huggingface/hub/models--Qwen--Qwen3.8-Flash-Next/snapshots/*/model.safetensors.index.json",
                        '"total_size": 360004158750'),
    "hf-cache-600": (1, "find /home/lenovo/vllm/huggingface -perm 600", "/blobs/"),
    "hf-cache-incomplete": (1, "ls /home/lenovo/vllm/huggingface/hub/*/snapshots/*/ | grep -c safetensors$", "2"),
    "hf-cache-dereferenced": (1, "find /home/lenovo/vllm/huggingface/hub/*/snapshots -type f", "config.json"),
    "low-memavailable": (1, "grep MemAvailable /proc/meminfo", "MemAvailable:"),
    "docker-group-missing": (1, "id -nG lenovo | grep -qw docker || echo not-in-docker-group", "not-in-docker-group"),
    "compose-v1-only": (1, "docker compose version || echo no-compose-v2", "no-compose-v2"),
    "image-layers-differ": (1, "docker history -q gb10sim/vllm-cpu:local | wc -l", "2"),
    "shard-truncated": (1, "f=$(ls /home/lenovo/vllm/huggingface/hub/*/snapshots/*/model-00001-of-00003.safetensors); "
                           "[ $(stat -L -c %s $f) -lt 60000000 ] && echo cut-short", "cut-short"),
    "image-missing": (1, "docker images -q gb10sim/vllm-cpu:local | wc -l", "0"),
    "gpu-not-in-container": (1, "docker run --rm --gpus all gb10sim/vllm-cpu:local true", 'could not select device driver ""'),
    "stale-container": (0, "docker ps --format '{{.Names}} {{.State}}'", "gb10-vllm running"),
    "page-cache": (0, "free -g | awk '/Mem:/ {print \"cache\", $6}'", "cache 4"),
}


def test_every_scenario_has_a_visibility_check():
    # Serving scenarios restart the head's real vLLM another way: test_serving_on_sim shows each through the API.
    serving = {s.name for s in scenarios.SCENARIOS.values() if any(step.serve is not None for step in s.steps)}
    # Ray scenarios apply to a Ray pair only: test_ray_on_sim shows each through the checks it fails.
    ray = {s.name for s in scenarios.SCENARIOS.values() if s.executor == "ray"}
    assert set(VISIBLE) == set(scenarios.SCENARIOS) - serving - ray


@pytest.mark.parametrize("name", sorted(VISIBLE))
def test_scenario_is_visible_on_the_node(sim, name):
    control.up(2, quiet=True)
    scenarios.apply(name)
    rank, command, expected = VISIBLE[name]
    node = control.nodes()[rank]
    out = control.node_exec(node, command, check=False)
    assert expected in out.stdout + out.stderr
    assert json.loads((control.state_dir() / "sim.json").read_text())["scenarios"] == [name]


def test_ufw_drop_is_a_real_drop(sim):
    control.up(2, quiet=True)
    a, b = control.nodes()
    listen = "nohup python3 -c \"import socket;s=socket.create_server(('',29501));s.settimeout(8);s.accept()\" >/dev/null 2>&1 &"
    probe = "python3 -c \"import socket;socket.create_connection(('169.254.159.206',29501),timeout=2)\""
    control.node_exec(b, listen)
    assert control.node_exec(a, "sleep 0.3;" + probe, check=False).returncode == 0
    scenarios.apply("ufw-no-qsfp-rules")
    control.node_exec(b, listen)
    failed = control.node_exec(a, "sleep 0.3;" + probe, check=False)
    assert failed.returncode != 0 and "timed out" in failed.stderr


def test_down_leaves_nothing_and_is_idempotent(sim):
    _, before = sim
    control.up(2, quiet=True)
    control.down(quiet=True)
    control.down(quiet=True)
    assert host_snapshot() == before
    assert not control.state_dir().exists()


def test_down_after_a_failed_up_cleans_up(sim, monkeypatch):
    _, before = sim
    monkeypatch.setattr(control, "BOOT", Path("/nonexistent/boot.py"))
    with pytest.raises(control.SimError, match="did not boot"):
        control.up(2, quiet=True)
    assert host_snapshot() == before


def test_without_root_it_refuses(sim):
    proc = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-m",
                           "gb10check", "sim", "down"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "the simulated cluster needs root" in proc.stderr


def test_eight_nodes_behind_a_switch(sim):
    try:
        path = control.up(8, quiet=True)
        cluster = load_cluster(path)
        assert len(cluster.nodes) == 8 and len(cluster.link_pairs()) == 2 * 28
        last = control.nodes()[-1]
        assert control.node_exec(last, "ping -c 1 -W 2 169.254.100.10").returncode == 0
        assert control.node_exec(last, "ping -c 1 -W 2 192.168.101.10").returncode == 0
    finally:
        control.up(2, quiet=True)
