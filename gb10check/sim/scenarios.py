"""Fault scenarios: one per failure mode, applied to the running simulation by real changes.

Each scenario is data: steps that run a real command inside a node (ufw, ip, chmod, usermod ...)
or change the stand-in state for hardware the machine lacks (driver versions, GID layout,
bandwidth), and `proves`: the checks it makes fail and the code each one reports. Nodes are chosen
by rank, so the same scenario works on 2 or 8 nodes. `gb10check sim scenarios` lists them.
"""

import json
import shlex
from dataclasses import dataclass, field

import yaml

from . import control, image, model_files, provision, serve, topology
from .provision import MODEL_REPO


class ScenarioError(Exception):
    pass


@dataclass(frozen=True)
class Step:
    rank: int  # -1: every node
    shell: str | None = None  # a real command, as root, inside the node
    state: dict = field(default_factory=dict)  # stand-in state to merge (hardware we do not have)
    files: tuple = ()  # files to create in the node (see control.make_files)
    cluster: dict = field(default_factory=dict)  # changes to the sim's cluster file (what the user configured)
    serve: dict | None = None  # restart the head's real vLLM with these options (see sim/serve.py)
    # cables moved on this machine (control.recable): ((rank, netdev), (rank, netdev)) each; `rank` is unused
    cables: tuple = ()


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    steps: tuple[Step, ...]
    # What it proves: "test_function:code" for every check that must fail (or warn) under it, and nothing else
    # (selftests/test_checks_on_sim.py and test_serving_on_sim.py hold the exact test ids and messages and check both).
    proves: tuple[str, ...] = ()
    # The sim's executor it needs: "ray" scenarios change the Ray playbook's stack (`gb10check sim up --executor ray`)
    # and are proven by selftests/test_ray_on_sim.py.
    executor: str = "mp"
    # The sim's topology it needs (`gb10check sim up --nodes N --topology ...`): pair, ring (3 nodes) or switch (4 nodes);
    # the ring's and the switch's are proven by selftests/test_cabling_on_sim.py.
    topology: str = "pair"


def _links(**per_link) -> dict:
    return {"links": per_link}


HF = "/home/lenovo/vllm/huggingface"
RAY_VENV = str(provision.venv())  # the image bind-mounts it (sim/image.py): a node's own overlay can lose Ray
IMAGE = image.NAME
MODEL_DIR = f"{HF}/hub/models--" + MODEL_REPO.replace("/", "--")


# The image as an NGC one: its own entrypoint (/opt/nvidia/nvidia_entrypoint.sh, which runs the command) in a layer made
# the same on every node (every time 0), so the nodes' images keep the same layers.
NGC_ENTRYPOINT_TAR = ("import io, sys, tarfile\n"
                      "body = b'#!/bin/sh\\n# gb10sim: stands for an NGC image entrypoint (CUDA forward-compatibility set-up)\\n"
                      "exec \"$@\"\\n'\n"
                      "with tarfile.open(fileobj=sys.stdout.buffer, mode='w|') as tar:\n"
                      "    for name in ('opt', 'opt/nvidia'):\n"
                      "        info = tarfile.TarInfo(name); info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0\n"
                      "        tar.addfile(info)\n"
                      "    info = tarfile.TarInfo('opt/nvidia/nvidia_entrypoint.sh'); info.size, info.mode, info.mtime = len(body), 0o755, 0\n"
                      "    tar.addfile(info, io.BytesIO(body))\n")
NGC_IMAGE = (f"docker create --name gb10sim-ngc {IMAGE} /bin/true >/dev/null && python3 -c {shlex.quote(NGC_ENTRYPOINT_TAR)} "
             "| docker cp - gb10sim-ngc:/ && docker commit --change 'ENTRYPOINT [\"/opt/nvidia/nvidia_entrypoint.sh\"]' "
             f"gb10sim-ngc {IMAGE} >/dev/null && docker rm gb10sim-ngc >/dev/null")
# The image as pulled from a registry: docker's reference store gains a digest for it (what a pull records), dockerd
# restarted to read it.
PULLED_DIGEST = "sha256:" + "5eb5a1c0" * 8
PULLED_IMAGE = ("pkill -x dockerd; while pgrep -x dockerd >/dev/null; do sleep 0.1; done; python3 -c "
                "'import json; p = \"/var/lib/docker/image/overlay2/repositories.json\"; d = json.load(open(p)); "
                f"r = d[\"Repositories\"][\"{IMAGE.split(':')[0]}\"]; r[\"{IMAGE.split(':')[0]}@{PULLED_DIGEST}\"] = r[\"{IMAGE}\"]; "
                "json.dump(d, open(p, \"w\"))' && /usr/local/sbin/gb10sim-dockerd")


def _on_own_disk(path: str, size: str) -> str:
    """Shell that moves `path`'s files onto a real ext4 filesystem of `size` (a loop device over a sparse file in the
    node's own /var/tmp) mounted at `path`: a disk of its own that reads with direct I/O, fills up and can be throttled,
    where the node's root is a tmpfs overlay. `mount -o loop` sets autoclear: the loop device goes when the node stops."""
    img = f"/var/tmp/gb10sim-disk-{path.rsplit('/', 1)[-1]}.img"
    return (f"set -e; truncate -s {size} {img}; mkfs.ext4 -q -F {img}; mnt=$(mktemp -d); mount -o loop {img} $mnt; "
            f"rmdir $mnt/lost+found; cp -a {path}/. $mnt/; mount --bind $mnt {path}; umount $mnt; rmdir $mnt")


def image_changed(shell: str, *changes: str) -> str:
    """Shell that changes the node's deployment image locally: `shell` run in a container of it (the node's /usr mounted,
    as the sim's compose file does), then docker commit with `changes` (Dockerfile lines) under the same tag."""
    change = "".join(f" --change {shlex.quote(c)}" for c in changes)
    return (f"docker run --name gb10sim-edit -v /usr:/usr:ro {IMAGE} /bin/sh -c {shlex.quote(shell)} && "
            f"docker commit{change} gb10sim-edit {IMAGE} >/dev/null && docker rm gb10sim-edit >/dev/null")


NET_PLUGIN_DIR = "/opt/hpcx/nccl_rdma_sharp_plugin/lib"  # where NGC images keep HPC-X's net plugin
CUDA_TORCH_BIN = str(provision.cuda_torch_venv() / "bin")
NEEDS_CUDA_TORCH = frozenset({"nccl-2.30.4-nvls"})  # scenarios whose image runs it (recording provisions it)


def image_with_cuda_torch() -> str:
    """Shell that re-tags the node's image with the CUDA torch's python3 ahead of the vLLM venv's on its PATH (the sim's
    image takes its Python from the node: sim/image.py), as an image whose torch is a CUDA build: its programs, the
    NCCL identity canary among them, run there. No file changes: every node gets the same empty layer."""
    path = "ENV PATH=" + image.search_path(CUDA_TORCH_BIN)
    return (f"test -x {CUDA_TORCH_BIN}/python3 || {{ echo 'no CUDA torch here: run gb10check sim provision --cuda-torch "
            f"first' >&2; exit 1; }}; docker create --name gb10sim-path {IMAGE} /bin/true >/dev/null && "
            f"docker commit --change {shlex.quote(path)} gb10sim-path {IMAGE} >/dev/null && docker rm gb10sim-path >/dev/null")


# A real NetworkManager in a node: its own system bus, profiles in keyfiles, every device left unmanaged so the sim's
# links keep their addresses (a profile is judged by what it would do: on a real machine NetworkManager activates it).
NM_CONF = ("[main]\nplugins=keyfile\nno-auto-default=*\ndns=none\nrc-manager=unmanaged\n\n"
           "[keyfile]\nunmanaged-devices=*\n")
START_NM = ("mkdir -p /etc/NetworkManager/conf.d /run/dbus && "
            f"printf '{NM_CONF}' > /etc/NetworkManager/conf.d/99-gb10sim.conf && "
            "dbus-daemon --system --fork </dev/null >/dev/null 2>&1 && NetworkManager </dev/null >/dev/null 2>&1 && "
            "for i in $(seq 100); do nmcli -t general status >/dev/null 2>&1 && exit 0; sleep 0.1; done; "
            "echo 'NetworkManager did not answer within 10 s' >&2; exit 1")


SCENARIOS = {s.name: s for s in [
    Scenario("healthy", "nothing changed", ()),
    Scenario("docker-group-missing", "rank 1: the SSH user is not in the docker group (docker only through sudo)",
             (Step(1, shell="gpasswd -d lenovo docker"),),
             proves=("test_container_runtime:docker-unreachable",)),
    Scenario("compose-v1-only", "rank 1: no compose v2 plugin (only what Debian 12 ships: compose v1)",
             (Step(1, shell="rm /usr/local/lib/docker/cli-plugins/docker-compose /usr/libexec/docker/cli-plugins/docker-compose "
                            "2>/dev/null; ! docker compose version"),),
             proves=("test_container_runtime:compose-v2-missing",)),
    Scenario("image-layers-differ", "rank 1: the image was changed locally (docker commit) instead of copied from rank 0",
             (Step(1, shell=f"docker create --name gb10sim-edit {IMAGE} /bin/true && docker cp /etc/hostname gb10sim-edit:/etc/edited "
                            f"&& docker commit gb10sim-edit {IMAGE} && docker rm gb10sim-edit"),),
             proves=("test_image_same_as_head:image-layers-differ",)),
    Scenario("shard-truncated", "rank 1: a safetensors shard cut short (an interrupted copy): the rank dies while loading",
             (Step(1, shell=f"f=$(readlink -f {MODEL_DIR}/snapshots/*/model-00001-of-00003.safetensors) && "
                            "truncate -s $(( $(stat -c %s $f) / 2 )) $f"),),
             proves=("test_model_same_as_head:model-differs",)),
    Scenario("image-missing", "rank 1: the deployment image was never loaded", (Step(1, shell=f"docker rmi {IMAGE}"),),
             proves=("test_image:image-missing",)),
    Scenario("gpu-not-in-container", "rank 1: no NVIDIA container toolkit hook: docker cannot give containers the GPU",
             (Step(1, shell="rm /usr/local/bin/nvidia-container-runtime-hook && /usr/local/sbin/gb10sim-dockerd"),),
             proves=("test_gpu_in_container:container-no-gpu",)),
    # The NVIDIA Container Toolkit (the nvidia-ctk stand-in, the CDI spec the sim wrote at boot, the runtime's config.toml).
    Scenario("cdi-spec-stale", f"rank 1: the CDI spec was generated under driver 580.126.09; the driver is {topology.USER_DRIVER} "
             "now (an upgrade that left /etc/cdi/nvidia.yaml behind)",
             (Step(1, state={"user_driver": "580.126.09"}, shell="nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml 2>/dev/null"),
              Step(1, state={"user_driver": topology.USER_DRIVER})),
             proves=("test_cdi_spec:cdi-spec-stale",)),
    Scenario("toolkit-1.19.1", "every node: NVIDIA Container Toolkit 1.19.1 (CUDA fails to start in --gpus containers after "
             "the upgrade from 1.19.0)",
             (Step(-1, state={"toolkit_version": "1.19.1"}),),
             proves=("test_container_toolkit:known-bad-version",)),
    Scenario("toolkit-mode-differs", "rank 1: the container runtime in CDI mode (config.toml mode = \"cdi\"), rank 0 in auto",
             (Step(1, shell="sed -i 's/^mode = \"auto\"/mode = \"cdi\"/' /etc/nvidia-container-runtime/config.toml"),),
             proves=("test_toolkit_same_as_head:toolkit-differs",)),
    Scenario("ngc-entrypoint-overridden", "every node: the image is an NGC one (its entrypoint /opt/nvidia/nvidia_entrypoint.sh) "
             "and the compose service replaces it with /bin/bash -lc (a warning)",
             (Step(-1, shell=NGC_IMAGE),),
             proves=("test_compose_image:compose-entrypoint",)),
    Scenario("image-tag-unpinned", f"every node: the image was pulled (it has a registry digest, {PULLED_DIGEST[:15]}...) and "
             "the compose file names it by tag (a warning)",
             (Step(-1, shell=PULLED_IMAGE),),
             proves=("test_compose_image:compose-image-unpinned",)),
    Scenario("stale-container", "rank 0: the last deployment's serving container still runs and holds 1 GiB",
             (Step(0, shell=f"docker run -d --name gb10-vllm -v /usr:/usr:ro {IMAGE} /usr/bin/python3 -c "
                            "'import time; b = bytearray(1 << 30); time.sleep(1e6)' && sleep 1"),),
             proves=("test_no_serving_container_left:stale-container",)),
    Scenario("driver-mismatch", "rank 1: loaded kernel module 580.159.03, user-mode driver 580.173.02 (needs a reboot)",
             (Step(1, state={"kernel_module": "580.159.03"}),),
             proves=("test_driver_parity:nvml-mismatch",)),
    Scenario("driver-differs", "rank 1 runs driver 580.126.09, rank 0 580.173.02 (consistent on each node)",
             # its CDI spec generated for it, as the toolkit's install does (cdi-spec-stale is the spec left behind)
             (Step(1, state={"kernel_module": "580.126.09", "user_driver": "580.126.09"},
                   shell="nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml 2>/dev/null"),),
             proves=("test_driver_same_as_head:driver-differs",)),
    Scenario("ufw-no-qsfp-rules", "rank 1: ufw default deny without the QSFP subnet rules (29501 really dropped)",
             (Step(1, shell="ufw delete allow from 169.254.0.0/16 && ufw delete allow from 192.168.101.0/24"),),
             proves=("test_firewall:ufw-source", "test_ib_write_bw:rdma-run", "test_nccl_all_gather:nccl-run", "test_port_open:port-blocked")),
    Scenario("ufw-not-persisted", "rank 1: QSFP rules added with iptables by hand: live now, gone after a reboot",
             (Step(1, shell="ufw delete allow from 169.254.0.0/16 && ufw delete allow from 192.168.101.0/24 && "
                            "iptables -I ufw-user-input 1 -s 169.254.0.0/16 -j ACCEPT && "
                            "iptables -I ufw-user-input 1 -s 192.168.101.0/24 -j ACCEPT"),),
             proves=("test_firewall:ufw-not-persisted",)),
    Scenario("link2-down", "rank 1: the second logical link (enP2p1s0f0np0) is down",
             (Step(1, shell="ip link set enP2p1s0f0np0 down"),),
             proves=("test_cabling:cable-nothing", "test_compose_lint:compose-env", "test_ib_write_bw:rdma-run", "test_link_speed:link-down", "test_nccl_all_gather:nccl-bandwidth", "test_nccl_all_gather:nccl-socket-fallback", "test_ping:ping", "test_rdma_link_up:link-down", "test_rdma_port_active:port-not-active", "test_route_to_peer:route-wrong-dev", "test_ssh_mesh:ssh-mesh")),
    Scenario("gid-moved", "rank 1: GID index 3 is RoCE v1; RoCE v2 with the IPv4 address moved to index 5",
             (Step(1, state={"gid_layout": "shifted"}),),
             proves=("test_compose_lint:compose-env", "test_nccl_all_gather:nccl-socket-fallback", "test_nccl_all_gather:nccl-bandwidth",
                     "test_roce_gid:gid-not-roce-v2")),
    Scenario("low-bandwidth", "rank 1: roceP2p1s0f0 delivers 41 Gb/s (threshold 90)",
             (Step(1, state=_links(enP2p1s0f0np0={"bandwidth_gbps": 41.3})),),
             proves=("test_ib_write_bw:rdma-bandwidth",)),
    Scenario("link-speed-100g", "rank 1: enp1s0f0np0 negotiated 100000 Mb/s instead of 200000",
             (Step(1, state=_links(enp1s0f0np0={"speed_mbps": 100000})),),
             proves=("test_link_speed:link-speed",)),
    Scenario("different-usernames", "rank 1: the account is 'nvidia', not 'lenovo'",
             (Step(1, shell="pkill -u lenovo; usermod -l nvidia -d /home/nvidia -m lenovo"),),
             proves=("test_ssh_user:ssh-key-refused", "test_ssh_mesh:ssh-mesh", "test_nccl_all_gather:nccl-run")),
    Scenario("ssh-blocked", "rank 1: its firewall drops SSH on the management interface (the runner's connection times out)",
             (Step(1, shell="ufw insert 1 deny in on enP7s7 to any port 22 proto tcp"),),
             proves=("test_ssh_user:ssh-timeout",)),
    Scenario("host-key-changed", "rank 1: a new SSH host key, as after a reinstall (known_hosts holds the old one)",
             (Step(1, shell="ssh-keygen -q -t ed25519 -N '' -C reinstalled -f /tmp/gb10sim-new-key && "
                            "mv /tmp/gb10sim-new-key /etc/ssh/ssh_host_ed25519_key && "
                            "mv /tmp/gb10sim-new-key.pub /etc/ssh/ssh_host_ed25519_key.pub && kill -HUP $(cat /run/sshd.pid) && "
                            "for i in $(seq 100); do ssh-keyscan -t ed25519 127.0.0.1 2>/dev/null | grep -qF "
                            "\"$(cut -d' ' -f2 /etc/ssh/ssh_host_ed25519_key.pub)\" && break; sleep 0.1; done"),),
             proves=("test_ssh_user:host-key-changed", "test_ssh_mesh:ssh-mesh")),
    Scenario("sudo-password", "rank 1: sudo asks the SSH user for a password (its sudoers line without NOPASSWD)",
             (Step(1, shell="sed -i 's/NOPASSWD://' /etc/sudoers.d/gb10sim"),)),
    Scenario("ssh-not-passwordless", "rank 1: the shared cluster key is not in authorized_keys (nodes cannot ssh in)",
             (Step(1, shell="sed -i '/gb10sim-shared-cluster-key/d' /home/lenovo/.ssh/authorized_keys"),),
             proves=("test_nccl_all_gather:nccl-run", "test_ssh_mesh:ssh-mesh")),
    Scenario("netplan-644", "rank 0: /etc/netplan/40-cx7.yaml is mode 644 (netplan warns; others can read it)",
             (Step(0, shell="chmod 644 /etc/netplan/40-cx7.yaml"),),
             proves=("test_netplan_file:netplan-mode",)),
    Scenario("bf16-checkpoint", "the BF16 checkpoint configured and downloaded: 167.6 GiB per node, over 119 GiB",
             (Step(-1, files=tuple(model_files.cache_files(HF, model_files.REPO_BF16)),
                   shell=f"sed -i 's|^MODEL_ID=.*|MODEL_ID={model_files.REPO_BF16}|' /home/lenovo/vllm/.env"),
              Step(0, cluster={"deploy": {"model_id": model_files.REPO_BF16}})),
             proves=("test_memory_fit:model-wedge",)),
    Scenario("hf-cache-600", "rank 1: a file of the model's cache is mode 600 (unreadable to others)",
             (Step(1, shell=f"chmod 600 {MODEL_DIR}/blobs/$(basename $(readlink {MODEL_DIR}/snapshots/*/config.json))"),),
             proves=("test_model_artifacts:model-unreadable",)),
    Scenario("hf-cache-incomplete", "rank 1: one safetensors shard of the model is missing",
             (Step(1, shell=f"rm {MODEL_DIR}/snapshots/*/model-00002-of-00003.safetensors"),),
             proves=("test_model_artifacts:model-incomplete", "test_model_same_as_head:model-differs")),
    Scenario("hf-cache-dereferenced", "rank 1: the cache was copied with links followed (regular files in snapshots/)",
             (Step(1, shell=f"cd {MODEL_DIR}/snapshots/* && for f in config.json model.safetensors.index.json; do "
                            "cp --remove-destination $(readlink -f $f) $f; done"),),
             proves=("test_model_artifacts:model-dereferenced",)),
    Scenario("low-memavailable", "rank 1: other work holds 115 GiB; MemAvailable about 5.6 GiB, under the need plus margin",
             (Step(1, state={"extra_used_kb": 115 * 1024 * 1024}),),
             proves=("test_memory_available:memory-low",)),
    # With the start memory gate's page-cache cause (checks/memory.py): CUDA's free memory is the stand-in driver's
    # (standins/libcuda.c), MemFree of the node's /proc/meminfo, the page cache counted as used as on GB10.
    Scenario("page-cache", "rank 0: 40 GiB of page cache (weights just read) before loading: CUDA's free under "
             "gpu_memory_utilization x total + margin, the page cache enough to cover it",
             (Step(0, state={"extra_cached_kb": 40 * 1024 * 1024}),),
             proves=("test_memory_available:page-cache", "test_start_memory:start-memory-page-cache")),
    Scenario("orphaned-engine-core", "rank 1: a VLLM::EngineCore left running after its API server was killed (a real "
             "process, parent init), holding 80 GiB of unified memory",
             (Step(1, state={"extra_used_kb": 80 * 1024 * 1024, "gpu_memory_mib": {"VLLM::EngineCore": 80 * 1024}},
                   shell="setsid bash -c 'exec -a VLLM::EngineCore /usr/bin/python3 -c \"import time; time.sleep(1e6)\"' "
                         "</dev/null >/dev/null 2>&1 & for i in $(seq 50); do pgrep -f '^VLLM::EngineCore' >/dev/null && "
                         "exit 0; sleep 0.1; done; exit 1"),),
             proves=("test_no_gpu_process_left:gpu-process-left", "test_start_memory:start-memory-process")),
    Scenario("memory-held-no-process", "rank 1: 60 GiB held with no process to show for it (after an abnormal exit): only a "
             "reboot frees it",
             (Step(1, state={"extra_used_kb": 60 * 1024 * 1024}),),
             proves=("test_start_memory:start-memory-reboot",)),
    Scenario("compose-differs", "rank 1: its compose file was edited by hand (NCCL_DEBUG: INFO)",
             (Step(1, shell="sed -i 's/NCCL_DEBUG: WARN/NCCL_DEBUG: INFO/' /home/lenovo/vllm/compose.yml"),),
             proves=("test_compose_same_as_head:compose-differs",)),
    Scenario("env-dup-rank", "rank 1: .env says NODE_RANK=0 (copied from rank 0)",
             (Step(1, shell="sed -i 's/^NODE_RANK=.*/NODE_RANK=0/' /home/lenovo/vllm/.env"),),
             proves=("test_env_file:env-file",)),
    Scenario("no-headless", "every node: the command never adds --headless (the seed's first FP8 round)",
             (Step(-1, shell="sed -i 's/; then args+=(--headless); fi/; then :; fi/' /home/lenovo/vllm/compose.yml"),),
             proves=("test_compose_lint:compose-headless",)),
    Scenario("cudagraph-hyphen", "every node: -cc.cudagraph-mode=FULL_DECODE_ONLY (vLLM rejects it, exit 2)",
             (Step(-1, shell="sed -i 's/-cc.cudagraph_mode=/-cc.cudagraph-mode=/' /home/lenovo/vllm/compose.yml"),),
             proves=("test_compose_lint:compose-cudagraph-hyphen",)),
    Scenario("no-memory-limit", "every node: no memory limit on the container (an overrun takes the machine)",
             (Step(-1, shell="sed -i '/memory: 105G/d' /home/lenovo/vllm/compose.yml"),),
             proves=("test_compose_lint:compose-no-memory-limit",)),
    Scenario("compose-no-offline", "every node: the compose environment has no HF_HUB_OFFLINE (each rank would ask the Hub at "
             "start-up, a follower download the model itself)",
             (Step(-1, shell="sed -i '/HF_HUB_OFFLINE/d' /home/lenovo/vllm/compose.yml"),),
             proves=("test_compose_offline:compose-no-offline",)),
    Scenario("compose-cache-not-mounted", "every node: the Triton cache (/root/.triton) is not mounted from the host (kernels "
             "compiled again at every start; a warning)",
             (Step(-1, shell="sed -i '\\|:/root/.triton$|d' /home/lenovo/vllm/compose.yml"),),
             proves=("test_compose_caches:compose-cache-not-mounted",)),
    Scenario("os-differs", "rank 1 runs another OS image (os-release says Ubuntu 22.04.5 LTS)",
             (Step(1, shell="sed -i 's/^PRETTY_NAME=.*/PRETTY_NAME=\"Ubuntu 22.04.5 LTS\"/' /etc/os-release"),),
             proves=("test_os_parity:os-parity",)),
    Scenario("gpu-not-gb10", "rank 1's GPU is not the profile's (nvidia-smi names an NVIDIA GH200 480GB)",
             (Step(1, state={"gpu_name": "NVIDIA GH200 480GB"}),),
             proves=("test_gpu_name:gpu-name",)),
    Scenario("gpu-stuck-low-power", "rank 1's GPU stuck in the low-power state: SM clock 801 MHz of 3003 under load at 19.6 W, "
             "no clock-event reason shown (only an AC power-off clears it)",
             (Step(1, state={"gpu_load": {"sm_clock_mhz": 801, "power_w": 19.6, "clock_event_reasons": 0}}),),
             proves=("test_gpu_compute:gpu-clock-low",)),
    Scenario("gpu-compute-slow", "rank 1's GPU multiplies at 36 TFLOP/s, rank 0's at 90 (the compute canary's stand-in), "
             "while nvidia-smi shows a busy GPU at full clock: slower with no reason shown",
             (Step(1, state={"gpu_load": {"tflops": 36.0}}),),
             proves=("test_gpu_compute:gpu-compute-spread", "test_gpu_compute:gpu-compute-low")),
    Scenario("mtu-mismatch", "rank 1: enp1s0f0np0 has MTU 9000, its peer 1500",
             (Step(1, shell="ip link set enp1s0f0np0 mtu 9000"),),
             proves=("test_mtu_equal:mtu-mismatch", "test_path_mtu:path-mtu")),
    Scenario("roce-mtu-stuck", "enp1s0f0np0 at MTU 9000 on every node, rank 1's RDMA port still at active_mtu 1024 (a warning)",
             (Step(-1, shell="ip link set enp1s0f0np0 mtu 9000"), Step(1, state=_links(enp1s0f0np0={"roce_active_mtu": 1024}))),
             proves=("test_roce_mtu:roce-mtu",)),
    Scenario("bios-before-april-2026", "every node: a BIOS dated 01/20/2026 (the second ConnectX-7 controller at Gen5 x2; a warning)",
             (Step(-1, state={"bios_version": "5.36_0ACUM009", "bios_date": "01/20/2026"}),),
             proves=("test_advisories:known-bad-version",)),
    Scenario("firmware-differs", "rank 1: ConnectX-7 firmware 28.44.1036, rank 0 28.45.4028",
             (Step(1, state={"fw_ver": "28.44.1036"}),),
             proves=("test_versions_same_as_head:version-differs",)),
    Scenario("pcie-gen5-x2", "rank 1: the second ConnectX-7 controller (0002:01:00.x) trained at PCIe Gen5 x2 instead of x4 "
             "(a GB10 BIOS before April 2026; lspci's LnkSta says Width x2 (downgraded))",
             (Step(1, state=_links(enP2p1s0f0np0={"pcie": {"speed_gts": 32, "width": 2}},
                                   enP2p1s0f1np1={"pcie": {"speed_gts": 32, "width": 2}})),),
             proves=("test_pcie_link:pcie-degraded",)),
    Scenario("rdma-port-errors", "rank 1: rocep1s0f0 counted 12 symbol errors and one link_downed since boot (a warning)",
             (Step(1, state=_links(enp1s0f0np0={"counters": {"symbol_error": 12, "link_downed": 1}})),),
             proves=("test_rdma_error_counters:rdma-error-counters",)),
    Scenario("disk-slow", "the model's blobs on a disk of their own on every node (ext4 on a loop device: reads with direct "
             "I/O), rank 1's drive reading at 109 MB/s against rank 0's 309 (the dd stand-in's figures: the seed's 850 s "
             "load against 300 s; a warning)",
             (Step(-1, shell=_on_own_disk(f"{MODEL_DIR}/blobs", "1G")),
              Step(1, state={"disk_read_bytes_s": 92771926016 / 850})),
             proves=("test_shard_read_rate:disk-slow",)),
    Scenario("disk-low", "rank 1: the Hugging Face cache on a 1 GiB disk of its own (ext4 on a loop device): the model fits, "
             "less than the 2 GiB margin left for logs, compile caches and a re-download (a warning)",
             (Step(1, shell=_on_own_disk(HF, "1G")),),
             proves=("test_disk_space:disk-low",)),
    Scenario("nm-dhcp-on-qsfp", "a real NetworkManager on every node; rank 0 has a static profile on enp1s0f0np0, rank 1 "
             "'Wired connection 2' with DHCP (ipv4.method auto, autoconnect on) bound to it (dgx-spark-playbooks issue 56)",
             (Step(-1, shell=START_NM),
              Step(0, shell="nmcli connection add type ethernet ifname enp1s0f0np0 con-name cx7-port0 ipv4.method manual "
                            "ipv4.addresses \"$(ip -4 -br addr show enp1s0f0np0 | awk '{print $3}')\" >/dev/null"),
              Step(1, shell="nmcli connection add type ethernet ifname enp1s0f0np0 con-name 'Wired connection 2' "
                            "ipv4.method auto >/dev/null")),
             proves=("test_no_dhcp_on_qsfp:nm-dhcp-qsfp",)),
    Scenario("gpu-xid", "rank 1's kernel log since boot holds a GPU MMU fault (Xid 31) and the driver's NV_ERR_NO_MEMORY, "
             "as dmesg prints them (a warning; this machine's kernel has no GPU: the node's dmesg adds the lines)",
             (Step(1, state={"kernel_log": [
                 {"at_s": 4021.118204, "message": "NVRM: Xid (PCI:000f:01:00): 31, pid=20417, name=python3, channel 0x00000002, "
                                                  "intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_3a400000. "
                                                  "Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"},
                 {"at_s": 4021.119730, "message": "NVRM: nvAssertOkFailedNoLog: Assertion failed: Out of memory [NV_ERR_NO_MEMORY] "
                                                  "(0x00000051) returned from _memdescAllocInternal"}]}),),
             proves=("test_kernel_log:kernel-log",)),
    Scenario("nccl-corrupt", "rank 1's path corrupts data: nccl-tests counts 12 wrong elements at full bandwidth (the stand-in "
             "prints them; a real corruption needs a bad cable or HCA)",
             (Step(1, state={"nccl_wrong": 12}),),
             proves=("test_nccl_all_gather:nccl-wrong-values",)),
    Scenario("reboot-pending", "rank 1: /var/run/reboot-required after a kernel and driver upgrade (a warning)",
             (Step(1, shell="printf 'linux-image-6.17.0-1014-nvidia\\nnvidia-dkms-580-open\\n' > /var/run/reboot-required.pkgs && "
                            "printf '*** System restart required ***\\n' > /var/run/reboot-required"),),
             proves=("test_reboot_required:reboot-required",)),
    Scenario("driver-unheld", "rank 1: nvidia-driver-580-open installed (a dpkg record: no NVIDIA packages here), not held (a warning)",
             (Step(1, shell="printf '\\nPackage: nvidia-driver-580-open\\nStatus: install ok installed\\nPriority: optional\\nSection: restricted/libs\\nMaintainer: gb10sim\\nArchitecture: all\\nVersion: 580.173.02-0ubuntu1\\nDescription: NVIDIA driver metapackage (simulated)\\n' >> /var/lib/dpkg/status"),),
             proves=("test_driver_packages_held:driver-not-held",)),
    Scenario("default-route-qsfp", "rank 1: a default route through the QSFP link (to rank 0, which forwards nothing)",
             (Step(1, shell="ip route add default via 169.254.94.252 dev enp1s0f0np0"),),
             proves=("test_no_default_route_on_qsfp:default-route-qsfp",)),
    Scenario("netplan-missing-link", "rank 0: /etc/netplan/40-cx7.yaml does not describe enP2p1s0f0np0",
             (Step(0, shell="sed -i '/enP2p1s0f0np0/,+1d' /etc/netplan/40-cx7.yaml"),),
             proves=("test_netplan_file:netplan-content",)),
    # The NCCL the image's torch loads, judged against the advisories (gb10check/advisories.py)
    Scenario("nccl-2.30.4-nvls", f"every node: the image's torch is a CUDA build ({provision.CUDA_TORCH}) loading NCCL 2.30.4 "
             f"from its pip wheel ({provision.CUDA_TORCH_NCCL} installed over torch's own), and the compose environment "
             "has no NCCL_NVLS_ENABLE=0",
             (Step(-1, shell=image_with_cuda_torch()),),
             proves=("test_image_nccl:known-bad-version",)),
    # NCCL's configuration files and net plugin (checks/nccl_config.py)
    Scenario("nccl-conf-host-conflict", "rank 1: /etc/nccl.conf on the host sets NCCL_SOCKET_IFNAME=eth0 where the compose "
             "environment says enp1s0f0np0 (the rank takes the compose value, nccl-tests on the host the file's)",
             (Step(1, shell="printf '# left from a test\\nNCCL_SOCKET_IFNAME=eth0\\n' > /etc/nccl.conf"),),
             proves=("test_nccl_config:nccl-conf-conflict",)),
    Scenario("nccl-conf-image-silent", "rank 1's image changed locally (docker commit): its /root/.nccl.conf sets "
             "NCCL_PROTO=Simple, which the rank takes and no compose file shows (a warning)",
             (Step(1, shell=image_changed("printf 'NCCL_PROTO=Simple\\n' > /root/.nccl.conf")),),
             proves=("test_image_same_as_head:image-layers-differ", "test_nccl_config:nccl-conf-silent")),
    Scenario("nccl-net-plugin-image", "rank 1's image changed locally to carry an external net plugin (HPC-X's libnccl-net.so "
             "on its LD_LIBRARY_PATH, as NGC images do) and no NCCL_NET_PLUGIN in the compose environment: NCCL would load "
             "it ahead of its own IB transport (a warning)",
             (Step(-1, shell="sed -i '/NCCL_NET_PLUGIN/d' /home/lenovo/vllm/compose.yml"),
              Step(1, shell=image_changed(f"mkdir -p {NET_PLUGIN_DIR} && echo 'a stand-in: no NCCL here' > {NET_PLUGIN_DIR}/libnccl-net.so",
                                          f"ENV LD_LIBRARY_PATH={NET_PLUGIN_DIR}"))),
             proves=("test_image_same_as_head:image-layers-differ", "test_nccl_config:nccl-net-plugin")),
    Scenario("nccl-hca-own-rank", "rank 1: its own compose file names its uncabled port (NCCL_IB_HCA==rocep1s0f1); rank 0's "
             "names the cabled ones: only a rank run with its own node's environment falls back to sockets",
             (Step(1, shell="sed -i 's/NCCL_IB_HCA: =rocep1s0f0,roceP2p1s0f0/NCCL_IB_HCA: =rocep1s0f1/' /home/lenovo/vllm/compose.yml"),),
             proves=("test_compose_same_as_head:compose-differs", "test_compose_lint:compose-env",
                     "test_nccl_all_gather:nccl-socket-fallback", "test_nccl_all_gather:nccl-bandwidth",
                     "test_nccl_collectives:nccl-socket-fallback", "test_nccl_collectives:nccl-collectives-bandwidth")),
    Scenario("nccl-hca-crossed", "rank 1: its compose file lists its HCAs the other way round (NCCL_IB_HCA==roceP2p1s0f0,"
             "rocep1s0f0): its first NET device is on the second link's subnet while rank 0's is on the first's",
             (Step(1, shell="sed -i 's/NCCL_IB_HCA: =rocep1s0f0,roceP2p1s0f0/NCCL_IB_HCA: =roceP2p1s0f0,rocep1s0f0/' "
                            "/home/lenovo/vllm/compose.yml"),),
             proves=("test_compose_same_as_head:compose-differs", "test_nccl_collectives:nccl-channel-map")),
    Scenario("nccl-slow", "rank 1's NCCL path gives 60 Gb/s bus bandwidth and 80 us for an 8 KB all_reduce (the stand-ins "
             "print them; on GB10 a link at a lower speed or a loaded node)",
             (Step(1, state={"nccl_busbw_gbps": 60.0, "nccl_small_latency_us": 80.0}),),
             proves=("test_nccl_all_gather:nccl-bandwidth", "test_nccl_collectives:nccl-collectives-bandwidth",
                     "test_nccl_collectives:nccl-small-latency")),
    Scenario("nccl-absent", "every node: no MPI and no nccl-tests installed",
             (Step(-1, shell="rm -f /usr/local/bin/mpirun /usr/local/bin/all_gather_perf"),),
             proves=()),
    # Serving faults: the head's real vLLM restarted another way (needs `gb10check sim serve` first).
    Scenario("server-not-started", "the head's vLLM is not running (never started, or it died)",
             (Step(0, serve={"stopped": True}),),
             proves=("test_health:api-down",)),
    Scenario("wrong-served-name", "the head serves the model as 'smollm2-135m'; the cluster file names it 'smollm2-chat' "
             "(the name clients ask for is not the one the server registered)",
             (Step(0, cluster={"deploy": {"served_model_name": "smollm2-chat"}}, serve={"set": {"--served-model-name": "smollm2-135m"}}),),
             proves=("test_model_registered:model-not-served",)),
    Scenario("reasoning-parser-off", "the head's vLLM started without --reasoning-parser",
             (Step(0, serve={"drop": ["--reasoning-parser"]}),),
             proves=("test_reasoning:reasoning-missing",)),
    Scenario("tool-parser-off", "the head's vLLM started without --enable-auto-tool-choice --tool-call-parser",
             (Step(0, serve={"drop": ["--tool-call-parser"]}),),
             proves=("test_tool_call:tool-call-missing", "test_tool_call_streamed:tool-call-missing")),
    Scenario("server-throttled", "the head's vLLM is capped at 0.3 of a core (a CPU quota): about 3 tok/s, under the floor of 5 "
             "(one throughput repetition of 32 tokens: at that speed three of 128 take minutes)",
             (Step(0, serve={"cpu_quota": 0.3}, cluster={"serving": {"repetitions": 1, "decode_max_tokens": 32}}),),
             proves=("test_decode_throughput:decode-slow",)),
    Scenario("api-key-required", "the head's vLLM requires an API key; the runner has none in GB10CHECK_API_KEY",
             (Step(0, serve={"api_key": True}),),
             proves=("test_api_key:api-key",)),
    Scenario("engine-unexpected", "the head's vLLM has VLLM_MXFP4_BACKEND=CUTLASS in its environment (a variable vLLM 0.32 "
             "does not know: it warns and ignores it), and the cluster file expects an fp8 KV cache where the engine "
             "resolves auto",
             (Step(0, serve={"env": {"VLLM_MXFP4_BACKEND": "CUTLASS"}},
                   cluster={"serving": {"expect_engine": {"kv_cache_dtype": "fp8"}}}),),
             proves=("test_engine_config:engine-config", "test_engine_config:engine-unknown-env")),
    # The Ray path (deploy.executor: ray; `gb10check sim up --executor ray`): NVIDIA's two-node playbook's own failures.
    Scenario("ray-worker-mgmt-address", "rank 1: its Ray worker started with its management (LAN) address (198.18.0.11) as "
             "--node-ip-address (VLLM_HOST_IP in its .env), its LAN allowed by ufw as on a home network: it joins, at the "
             "wrong address (spark-vllm-docker issue 227)",
             # The address read in the node: it is 198.18.<instance>.11 (topology.mgmt_net).
             (Step(1, shell="a=$(ip -4 -o addr show enP7s7 | awk '{sub(\"/.*\", \"\", $4); print $4}') && "
                            "sed -i \"s/^VLLM_HOST_IP=.*/VLLM_HOST_IP=$a/\" /home/lenovo/vllm/.env && "
                            "ufw allow from \"${a%.*}.0/24\" >/dev/null"),),
             # test_ray_node_address fails once Ray runs (selftests/test_ray_on_sim.py starts it after the checks)
             # one cause, said once: the compose file's --node-ip-address=${VLLM_HOST_IP} is test_env_file's .env value
             proves=("test_env_file:env-file", "test_ray_node_address:ray-node-address"),
             executor="ray"),
    Scenario("ray-missing", "rank 1: the image's venv has no Ray (vLLM 0.18+ images dropped it: `ray: command not found`, "
             "dgx-spark-playbooks issues 75 and 109)",
             (Step(1, shell=f"rm -rf {RAY_VENV}/bin/ray {RAY_VENV}/lib/python3*/site-packages/ray"),),
             proves=("test_ray_in_image:ray-missing",), executor="ray"),
    Scenario("ray-memory-monitor", "every node: the compose file leaves Ray's memory monitor on (no "
             "RAY_memory_monitor_refresh_ms=0: it kills workers while the model loads)",
             (Step(-1, shell="sed -i '/RAY_memory_monitor_refresh_ms/d' /home/lenovo/vllm/compose.yml"),),
             proves=("test_compose_lint:ray-memory-monitor",), executor="ray"),
    Scenario("ray-port-closed", "rank 1: ufw denies Ray's node manager port 6700 from the QSFP subnets (a rule above the "
             "subnet allows)",
             (Step(1, shell="ufw insert 1 deny proto tcp from 169.254.0.0/16 to any port 6700 >/dev/null && "
                            "ufw insert 1 deny proto tcp from 192.168.101.0/24 to any port 6700 >/dev/null"),),
             proves=("test_port_open:port-blocked", "test_ray_ports_allowed:ray-port-not-allowed"), executor="ray"),
    Scenario("same-subnet", "rank 0 and 1: the second logical link moved into the first link's subnet",
             (Step(0, shell="ip -4 addr flush dev enP2p1s0f0np0 && ip addr add 169.254.94.253/16 dev enP2p1s0f0np0"),
              Step(1, shell="ip -4 addr flush dev enP2p1s0f0np0 && ip addr add 169.254.159.207/16 dev enP2p1s0f0np0")),
             proves=("test_ib_write_bw:rdma-run", "test_link_address:address-missing", "test_links_on_distinct_subnets:same-subnet", "test_ping:ping", "test_roce_gid:gid-not-roce-v2", "test_route_to_peer:route-wrong-dev", "test_ssh_mesh:ssh-mesh")),
    # The kernel-log scenarios: lines this machine's kernel cannot print (no ConnectX-7, no GPU), in the printk formats
    # the signs in checks/platform.py cite, added by rank 1's dmesg.
    Scenario("cx7-pcie-fatal", "rank 1's kernel log: a fatal PCIe AER on the second ConnectX-7's root port and the mlx5 PCI "
             "error recovery that reset it (MiaAI-Lab DSpark issue 146)",
             (Step(1, state={"kernel_log": [
                 {"at_s": 8812.402661, "message": "pcieport 0002:00:00.0: AER: Uncorrected (Fatal) error message received "
                                                  "from 0002:01:00.0"},
                 {"at_s": 8812.402702, "message": "mlx5_core 0002:01:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
                                                  "type=Transaction Layer, (Receiver ID)"},
                 {"at_s": 8812.402711, "message": "mlx5_core 0002:01:00.0:   device [15b3:1021] error status/mask=00040000/00000000"},
                 {"at_s": 8812.403190, "message": "mlx5_core 0002:01:00.0: mlx5_pci_err_detected Device state = 1 "
                                                  "pci_status: 1. Enter, pci channel state = 2"},
                 {"at_s": 8813.517734, "message": "mlx5_core 0002:01:00.0: mlx5_pci_slot_reset Device state = 2 pci_status: "
                                                  "0. Enter"}]}),),
             proves=("test_kernel_log:kernel-pcie-fatal", "test_kernel_log:kernel-nic-reset")),
    Scenario("cpu-soft-lockup", "rank 1's kernel log: a CPU stuck for 26 s in a python3 process, and a task blocked behind it "
             "for 122 s (a failure and a warning)",
             (Step(1, state={"kernel_log": [
                 {"at_s": 6120.884512, "message": "watchdog: BUG: soft lockup - CPU#7 stuck for 26s! [python3:20417]"},
                 {"at_s": 6242.771080, "message": "INFO: task nvidia-smi:21877 blocked for more than 122 seconds."},
                 {"at_s": 6242.771140, "message": "\"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" disables this message."}]}),),
             proves=("test_kernel_log:kernel-lockup", "test_kernel_log:kernel-hung-task")),
    Scenario("overheated", "rank 1's kernel log: the ConnectX-7 warned of high temperature, then a thermal zone reached its "
             "critical trip point (a warning and a failure)",
             (Step(1, state={"kernel_log": [
                 {"at_s": 9240.530211, "message": "mlx5_core 0000:01:00.0: temp_warn:170:(pid 0): High temperature on "
                                                  "sensors with bit set 0 1"},
                 {"at_s": 9301.118007, "message": "thermal thermal_zone0: acpitz: critical temperature reached"},
                 {"at_s": 9301.118050, "message": "reboot: HARDWARE PROTECTION shutdown (Temperature too high)"}]}),),
             proves=("test_kernel_log:kernel-thermal", "test_kernel_log:kernel-hot")),
]}


def _both_halves(*ends) -> tuple:
    """A physical cable is both logical links of a port (the adapter's two halves): ((rank, port), (rank, port)) pairs,
    port 0 or 1, as the cables of each half (topology.CABLED: port 0, UNCABLED: port 1)."""
    names = {0: [d for d, _ in topology.CABLED], 1: [d for d, _ in topology.UNCABLED]}
    return tuple(((a, names[pa][j]), (b, names[pb][j])) for (a, pa), (b, pb) in ends for j in range(2))


# Cabling faults (a ring of three: node i's port 0 to node i+1's port 1; a switch of four). Each fails test_cabling.
SCENARIOS.update({s.name: s for s in [
    Scenario("ring-crossed", "ring of three: rank 0's two cables swapped at rank 0 (its port 0 to rank 2's port 0, its port "
             "1 to rank 1's port 1)",
             (Step(-1, cables=_both_halves(((0, 0), (2, 0)), ((0, 1), (1, 1)))),),
             proves=("test_cabling:cable-wrong-peer",), topology="ring"),
    Scenario("ring-same-port", "ring of three: ranks 0 and 1 joined port 0 to port 0 and ranks 1 and 2 port 1 to port 1 (the "
             "triangle with ibv_modify_qp error 110)",
             (Step(-1, cables=_both_halves(((0, 0), (1, 0)), ((1, 1), (2, 1)))),),
             proves=("test_cabling:cable-wrong-peer",), topology="ring"),
    Scenario("ring-link-down", "ring of three: rank 1's port 1 (from rank 0's port 0) down: link down, nothing answers",
             (Step(1, shell="ip link set enp1s0f1np1 down"),),
             proves=("test_cabling:cable-nothing",), topology="ring"),
    Scenario("switch-direct-link", "switch of four: rank 0's enP2p1s0f0np0 off the switch, cabled straight to rank 1's free "
             "port enP2p1s0f1np1 beside it",
             (Step(-1, cables=(((0, "enP2p1s0f0np0"), (1, "enP2p1s0f1np1")),)),),
             proves=("test_cabling:cable-beside-switch", "test_cabling:cable-peer-missing"), topology="switch"),
]})


# The NCCL environment a ring needs (checks/nccl_config.judge_topology_env): each fails test_nccl_topology_env, judged
# from its recording of the ring of three (its cables as NVIDIA wires them).
SCENARIOS.update({s.name: s for s in [
    Scenario("ring-nccl-no-routing", "ring of three: the compose file on every node lacks NCCL_IB_SUBNET_AWARE_ROUTING=1 "
             "(a pair's file reused: stock NCCL sends over the cable to the wrong neighbour)",
             (Step(-1, shell="sed -i '/NCCL_IB_SUBNET_AWARE_ROUTING/d' /home/lenovo/vllm/compose.yml"),),
             proves=("test_nccl_topology_env:nccl-ring-env",), topology="ring"),
    Scenario("ring-nccl-plugin", "ring of three: the compose file on every node names an image's net plugin "
             "(NCCL_NET_PLUGIN=libnccl-net.so) instead of NCCL's own IB transport",
             (Step(-1, shell="sed -i 's/NCCL_NET_PLUGIN: none/NCCL_NET_PLUGIN: libnccl-net.so/' /home/lenovo/vllm/compose.yml"),),
             proves=("test_nccl_topology_env:nccl-ring-env",), topology="ring"),
]})


def change_state(node: str, change: dict) -> None:
    """Merge `change` into a node's stand-in state (its syncer renders it within 0.5 s; apply() refreshes at once)."""
    current = json.loads(control.node_exec(node, "cat /etc/gb10sim/state.json").stdout)
    control.node_exec(node, "cat > /etc/gb10sim/state.json.new && mv /etc/gb10sim/state.json.new /etc/gb10sim/state.json",
                      input=json.dumps(merge(current, change), indent=1))


def apply(name: str) -> None:
    if name not in SCENARIOS:
        raise ScenarioError(f"unknown scenario {name!r}; `gb10check sim scenarios` lists them")
    names = control.nodes()
    if not names:
        raise ScenarioError("no simulated cluster is up: run `gb10check sim up` first")
    sim_info = json.loads((control.state_dir() / "sim.json").read_text())
    running = sim_info.get("executor", "mp")
    if SCENARIOS[name].topology != sim_info.get("topology", "pair"):
        raise ScenarioError(f"scenario {name} needs the {SCENARIOS[name].topology} topology; the sim runs "
                            f"{sim_info.get('topology', 'pair')}: `gb10check sim up --nodes N --topology "
                            f"{SCENARIOS[name].topology}` first")
    if SCENARIOS[name].executor != running:
        raise ScenarioError(f"scenario {name} changes the {SCENARIOS[name].executor} stack; the sim runs {running}: "
                            f"`gb10check sim up --executor {SCENARIOS[name].executor}` first")
    for step in SCENARIOS[name].steps:
        if step.cables:
            control.recable(list(step.cables))
        if step.cluster:
            path = control.state_dir() / "cluster.yaml"
            doc = yaml.safe_load(path.read_text())
            path.write_text("# Written by `gb10check sim up`, changed by scenario " + name + "\n" +
                            yaml.safe_dump(merge(doc, step.cluster), sort_keys=False))
        targets = [] if step.cables else names if step.rank == -1 else [names[step.rank]]
        for node in targets:
            if step.files:
                control.make_files(node, list(step.files))
            if step.state:
                change_state(node, step.state)
            if step.shell:
                control.node_exec(node, step.shell)
        if step.serve is not None:
            serve.ensure(step.serve)
    for node in names:
        control.refresh(node)
    record = control.state_dir() / "sim.json"
    sim = json.loads(record.read_text())
    sim["scenarios"].append(name)
    record.write_text(json.dumps(sim))


def merge(base: dict, change: dict) -> dict:
    out = dict(base)
    for key, value in change.items():
        out[key] = merge(base.get(key, {}), value) if isinstance(value, dict) else value
    return out
