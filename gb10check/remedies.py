"""Failure codes and their fixes: one table for every check (the seed's troubleshooting table, and ours).

A check reports `Finding(Code.X, where, seen, expected, **params)`; the fix text comes from here,
so every failure carries one, and a self-test checks that every code is used by a check.
"""

from enum import Enum


class Code(str, Enum):
    SSH_USER = "ssh-user"
    # The node cannot be reached or refuses the runner: test_ssh_user fails with one of these, and every other check of
    # that node is not checked for the same cause (REACH below).
    SSH_NO_ROUTE = "ssh-no-route"
    SSH_REFUSED = "ssh-refused"
    SSH_TIMEOUT = "ssh-timeout"
    SSH_NAME_UNRESOLVED = "ssh-name-unresolved"
    HOST_KEY_UNKNOWN = "host-key-unknown"
    HOST_KEY_CHANGED = "host-key-changed"
    SSH_KEY_REFUSED = "ssh-key-refused"
    NODE_UNREACHABLE = "node-unreachable"
    OS_PARITY = "os-parity"
    GPU_NAME = "gpu-name"
    NVML_MISMATCH = "nvml-mismatch"
    DRIVER_MISMATCH = "driver-mismatch"
    DRIVER_DIFFERS = "driver-differs"
    DRIVER_PROFILE = "driver-profile"
    NO_DRIVER = "no-driver"
    UFW_SOURCE = "ufw-source"
    UFW_PORT = "ufw-port"
    UFW_NOT_PERSISTED = "ufw-not-persisted"
    UFW_NOT_AT_BOOT = "ufw-not-at-boot"
    CLOCK_SKEW = "clock-skew"
    LINK_MISSING = "link-missing"
    LINK_DOWN = "link-down"
    UP_LINKS_DIFFER = "up-links-differ"
    PORT_NOT_ACTIVE = "port-not-active"
    LINK_SPEED = "link-speed"
    NETPLAN_MISSING = "netplan-missing"
    NETPLAN_MODE = "netplan-mode"
    NETPLAN_CONTENT = "netplan-content"
    ADDRESS_MISSING = "address-missing"
    SAME_SUBNET = "same-subnet"
    DEFAULT_ROUTE_QSFP = "default-route-qsfp"
    MTU_MISMATCH = "mtu-mismatch"
    ROUTE_WRONG_DEV = "route-wrong-dev"
    CABLE_WRONG_PEER = "cable-wrong-peer"
    CABLE_NOTHING = "cable-nothing"
    CABLE_SWITCHED = "cable-switched"
    CABLE_BESIDE_SWITCH = "cable-beside-switch"
    CABLE_PEER_MISSING = "cable-peer-missing"
    CABLING_UNKNOWN = "cabling-unknown"
    PING = "ping"
    SSH_MESH = "ssh-mesh"
    GID_NOT_ROCE_V2 = "gid-not-roce-v2"
    PORT_BLOCKED = "port-blocked"
    RDMA_BANDWIDTH = "rdma-bandwidth"
    RDMA_RUN = "rdma-run"
    MODEL_MISSING = "model-missing"
    MODEL_NOT_COPIED = "model-not-copied"
    MODEL_INCOMPLETE = "model-incomplete"
    MODEL_DEREFERENCED = "model-dereferenced"
    MODEL_UNREADABLE = "model-unreadable"
    MODEL_DIFFERS = "model-differs"
    MODEL_WEDGE = "model-wedge"
    MODEL_TOO_BIG = "model-too-big"
    MODEL_CONFIG = "model-config"
    CONTAINER_LIMIT_LOW = "container-limit-low"
    MEMORY_LOW = "memory-low"
    DOCKER_MISSING = "docker-missing"
    DOCKER_UNREACHABLE = "docker-unreachable"
    COMPOSE_V2_MISSING = "compose-v2-missing"
    IMAGE_MISSING = "image-missing"
    IMAGE_ARCH = "image-arch"
    IMAGE_LAYERS_DIFFER = "image-layers-differ"
    CONTAINER_NO_GPU = "container-no-gpu"
    STALE_CONTAINER = "stale-container"
    # The start memory gate (checks/memory.py): vLLM's start-up check, with the cause named.
    START_MEMORY_PROCESS = "start-memory-process"
    START_MEMORY_PAGE_CACHE = "start-memory-page-cache"
    START_MEMORY_REBOOT = "start-memory-reboot"
    START_MEMORY_UTILIZATION = "start-memory-utilization"
    GPU_PROCESS_LEFT = "gpu-process-left"
    PAGE_CACHE = "page-cache"
    COMPOSE_MISSING = "compose-missing"
    COMPOSE_DIFFERS = "compose-differs"
    COMPOSE_NO_VLLM = "compose-no-vllm"
    COMPOSE_SETTING = "compose-setting"
    COMPOSE_NO_MEMORY_LIMIT = "compose-no-memory-limit"
    COMPOSE_HEADLESS = "compose-headless"
    COMPOSE_CUDAGRAPH_HYPHEN = "compose-cudagraph-hyphen"
    COMPOSE_ARG = "compose-arg"
    COMPOSE_ENV = "compose-env"
    COMPOSE_NO_OFFLINE = "compose-no-offline"
    COMPOSE_CACHE_NOT_MOUNTED = "compose-cache-not-mounted"
    ENV_FILE = "env-file"
    NCCL_RUN = "nccl-run"
    NCCL_SOCKET = "nccl-socket-fallback"
    NCCL_BANDWIDTH = "nccl-bandwidth"
    NCCL_WRONG_VALUES = "nccl-wrong-values"
    NCCL_CONF_CONFLICT = "nccl-conf-conflict"
    NCCL_CONF_SILENT = "nccl-conf-silent"
    NCCL_NET_PLUGIN = "nccl-net-plugin"
    # The NCCL environment a cabling needs (test_nccl_topology_env, and the collectives canary's own environment).
    NCCL_RING_ENV = "nccl-ring-env"
    NCCL_RING_STOCK = "nccl-ring-stock"
    NCCL_RING_ONLY = "nccl-ring-only"
    NCCL_RING_VERSION = "nccl-ring-version"
    # The collectives canary (test_nccl_collectives): each rank in the image with its own node's environment.
    COLLECTIVES_RUN = "nccl-collectives-run"
    NCCL_CHANNEL_MAP = "nccl-channel-map"
    COLLECTIVES_BANDWIDTH = "nccl-collectives-bandwidth"
    NCCL_LATENCY = "nccl-small-latency"
    GPU_COMPUTE_LOW = "gpu-compute-low"
    GPU_CLOCK_LOW = "gpu-clock-low"
    GPU_COMPUTE_SPREAD = "gpu-compute-spread"
    GPU_NOT_SAMPLED = "gpu-not-sampled"
    IMAGE_KERNELS = "image-kernels"
    IMAGE_PTXAS_ARCH = "image-ptxas-arch"
    IMAGE_NCCL_DIFFERS = "image-nccl-differs"
    IMAGE_NCCL_PIN = "image-nccl-pin"
    IMAGE_NCCL_ENV_STALE = "image-nccl-env-stale"
    IMAGE_NCCL_SPLIT = "image-nccl-split"
    VERSION_DIFFERS = "version-differs"
    KNOWN_BAD_VERSION = "known-bad-version"
    CDI_SPEC_STALE = "cdi-spec-stale"
    CDI_SPEC_MISSING = "cdi-spec-missing"
    TOOLKIT_DIFFERS = "toolkit-differs"
    COMPOSE_ENTRYPOINT = "compose-entrypoint"
    COMPOSE_IMAGE_UNPINNED = "compose-image-unpinned"
    REBOOT_REQUIRED = "reboot-required"
    DRIVER_NOT_HELD = "driver-not-held"
    KERNEL_LOG = "kernel-log"
    KERNEL_PCIE_FATAL = "kernel-pcie-fatal"
    KERNEL_NIC_RESET = "kernel-nic-reset"
    KERNEL_LOCKUP = "kernel-lockup"
    KERNEL_HUNG_TASK = "kernel-hung-task"
    KERNEL_THERMAL = "kernel-thermal"
    KERNEL_HOT = "kernel-hot"
    RDMA_ERROR_COUNTERS = "rdma-error-counters"
    NM_DHCP_QSFP = "nm-dhcp-qsfp"
    ROCE_MTU = "roce-mtu"
    DISK_FULL = "disk-full"
    DISK_LOW = "disk-low"
    DISK_SLOW = "disk-slow"
    PATH_MTU = "path-mtu"
    PCIE_DEGRADED = "pcie-degraded"
    RAY_MISSING = "ray-missing"
    RAY_VERSION_DIFFERS = "ray-version-differs"
    RAY_MEMORY_MONITOR = "ray-memory-monitor"
    RAY_PORT_NOT_ALLOWED = "ray-port-not-allowed"
    RAY_NAMES_DIFFER = "ray-names-differ"
    RAY_NODE_MISSING = "ray-node-missing"
    RAY_NODE_ADDRESS = "ray-node-address"
    RAY_GPUS = "ray-gpus"
    COMPOSE_RAY_ROLE = "compose-ray-role"
    # Not checked: we could not look (never a pass, never a fault of the cluster).
    COMMAND_TIMEOUT = "command-timeout"
    COMMAND_FAILED = "command-failed"
    GARBLED = "garbled-output"
    DRY_RUN_FAILED = "dry-run-failed"
    TOOL_MISSING = "tool-missing"
    SUDO_REFUSED = "sudo-refused"
    SUDO_MISSING = "sudo-missing"
    NO_RDMA = "no-rdma"
    PREREQUISITE = "prerequisite-failed"
    UNKNOWN_NEED = "unknown-need"
    NOT_RECORDED = "not-recorded"
    API_DOWN = "api-down"
    API_KEY = "api-key"
    API_ON_FOLLOWER = "api-on-follower"
    API_TIMEOUT = "api-timeout"
    API_ERROR = "api-error"
    MODEL_NOT_SERVED = "model-not-served"
    MODEL_ROOT = "model-root"
    MAX_MODEL_LEN = "max-model-len"
    ANSWER_WRONG = "answer-wrong"
    REASONING_MISSING = "reasoning-missing"
    TOOL_CALL_MISSING = "tool-call-missing"
    STREAM_BROKEN = "stream-broken"
    DECODE_SLOW = "decode-slow"
    DECODE_FLOOR_UNKNOWN = "decode-floor-unknown"
    CONCURRENCY = "concurrency"
    SWEEP_LEVEL = "sweep-level"
    TRAFFIC_ON_MGMT = "traffic-on-mgmt"
    FABRIC_UNSEEN = "fabric-unseen"
    ERROR_STATUS = "error-status"
    METRICS = "metrics"
    ENGINE_CONFIG = "engine-config"
    ENGINE_ARG_IGNORED = "engine-arg-ignored"
    ENGINE_FALLBACK = "engine-fallback"
    ENGINE_UNKNOWN_ENV = "engine-unknown-env"
    SOAK_STALL = "soak-stall"
    SOAK_REQUEST_ERROR = "soak-request-error"
    SOAK_MEMORY_FLOOR = "soak-memory-floor"
    SOAK_RANK_EXITED = "soak-rank-exited"
    SOAK_HANG_SIGNATURE = "soak-hang-signature"
    SOAK_NO_MEMORY = "soak-no-memory"
    SOAK_ENGINE_ERROR = "soak-engine-error"
    SOAK_NO_REQUESTS = "soak-no-requests"
    LONG_CONTEXT_REFUSED = "long-context-refused"
    LONG_CONTEXT_NONCE = "long-context-nonce"
    DEPTH_PP_SLOW = "depth-pp-slow"
    DEPTH_TG_SLOW = "depth-tg-slow"
    DEPTH_RUN = "depth-run"
    # Which rank stopped (gb10check/checks/ranks.py) and `gb10check watch`'s tick (gb10check/tick.py).
    RANK_STOPPED = "rank-stopped"
    WATCH_NO_ANSWER = "watch-no-answer"
    WATCH_TTFT = "watch-ttft"
    WATCH_ITL = "watch-itl"
    WATCH_MEMORY = "watch-memory"
    WATCH_TEMPERATURE = "watch-temperature"
    WATCH_THERMAL_SLOWDOWN = "watch-thermal-slowdown"
    WATCH_REBOOTED = "watch-rebooted"


SOAK_NCCL_FIX = ("the field's TP=2 hang after 20-26 minutes of concurrent load (vLLM issues 41725 and 42354): the pip wheel's libnccl and the DGX OS libnccl2 are both 2.28.9 but different builds; make every rank's torch load the system library (link /usr/lib/aarch64-linux-gnu/libnccl.so.2 over the wheel's nvidia/nccl/lib/libnccl.so.2 in the image), pin it with deploy.nccl {{version, build_id}} and check it with test_image_nccl; then restart every rank together "
                                 "(scripts/down, scripts/deploy) and soak again for 30-40 minutes")

REMEDIES: dict[Code, str] = {
    Code.SSH_USER: "create user {user} on {node} (NVIDIA's cluster scripts need the same user name on every node), "
                   "install the runner's key for it, or fix ssh.user in the cluster file",
    Code.SSH_NO_ROUTE: "this machine has no route to {address}: check that {node} is on and cabled to the management LAN, "
                       "that `ip route get {address}` here leaves by the management interface, and that the cluster file "
                       "gives {node}'s management address (not a QSFP link's); then: ssh -p {port} {user}@{address} true",
    Code.SSH_REFUSED: "{address} answers but nothing accepts SSH on port {port}: on {node} start sshd (sudo systemctl enable "
                      "--now ssh; `sudo ss -tlnp | grep sshd` shows its port) and check the port in the cluster file (ssh.port, "
                      "nodes[].ssh_port) and that no firewall rejects it (sudo ufw allow {port}/tcp)",
    Code.SSH_TIMEOUT: "nothing came back from {address}:{port} within ssh.connect_timeout_s: a firewall on {node} or between "
                      "drops the packets (sudo ufw allow {port}/tcp on {node}; `sudo ufw status`), or {node} is off or hung "
                      "(ping {address}, its console); then: ssh -p {port} {user}@{address} true",
    Code.SSH_NAME_UNRESOLVED: "the name {address} does not resolve on this machine (getent hosts {address} prints nothing): "
                              "give {node}'s IP address in the cluster file, or add the name to DNS or /etc/hosts",
    Code.HOST_KEY_UNKNOWN: "{kh_name} is not in {known_hosts}: read {node}'s key fingerprint on the node itself "
                           "(ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub), fetch the key (ssh-keyscan -p {port} "
                           "{address} > /tmp/{node}.key; ssh-keygen -lf /tmp/{node}.key) and append it to {known_hosts} only "
                           "if the fingerprints match; host keys stay verified",
    Code.HOST_KEY_CHANGED: "{node} offers another host key than {known_hosts} holds for {kh_name}: verify it first (on the "
                           "node's console: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub, against the fingerprint seen); "
                           "if {node} was reinstalled and they match, remove the old key (ssh-keygen -f {known_hosts} -R "
                           "'{kh_name}') and add the new one (ssh-keyscan -p {port} {address} >> {known_hosts}); if they "
                           "differ, something else answers at {address}: stop. Never turn host key checking off",
    Code.SSH_KEY_REFUSED: "{node} refused {user} with the runner's key ({identity}): the account {user} must exist on {node} "
                          "(NVIDIA's cluster scripts need the same user name on every node) and hold the key's public half "
                          "in ~{user}/.ssh/authorized_keys (ssh-copy-id -i {identity} -p {port} {user}@{address}), or fix "
                          "ssh.user / ssh.identity_file in the cluster file; then: ssh -i {identity} -p {port} {user}@{address} true",
    Code.NODE_UNREACHABLE: "the SSH connection to {node} ({address}:{port}) broke: check that {node} is still up (it may have "
                           "rebooted or run out of memory: journalctl -b -1 on it), that sshd runs (systemctl status ssh), "
                           "then: ssh -p {port} {user}@{address} true",
    Code.MODEL_CONFIG: "check config.json and model.safetensors.index.json of {repo} on {node} (a partial download or a "
                       "hand-edited file): gb10check sync copies rank 0's",
    Code.OS_PARITY: "install the same DGX OS / GB10 image and kernel on {node} as on {head} (apt full-upgrade on both, then reboot)",
    Code.GPU_NAME: "check that {node} is a GB10 machine and that the driver sees the GPU (nvidia-smi -L), or fix expect.gpu_name",
    Code.NVML_MISMATCH: "reboot {node}: the loaded kernel module is older than the installed user-mode driver "
                        "(seed: 580.159.03 kernel vs 580.173.02 user mode after fifty days of uptime)",
    Code.DRIVER_MISMATCH: "reboot {node} so the loaded kernel module matches the installed driver",
    Code.DRIVER_PROFILE: "install driver {version} on {node} (the version the profile names), then reboot it; or fix "
                         "expect.driver_version after checking the new driver on one node",
    Code.DRIVER_DIFFERS: "install the same NVIDIA driver on every node (apt install the version {head} runs), then reboot {node}",
    Code.NO_DRIVER: "install the NVIDIA driver on {node} or check that the module is loaded (lsmod | grep nvidia)",
    Code.UFW_SOURCE: "sudo ufw allow from {source} on {node} (torch rendezvous, NCCL and Gloo use ports that change)",
    Code.UFW_PORT: "sudo ufw allow {port} on {node}",
    Code.UFW_NOT_PERSISTED: "on {node} add the rule through ufw (sudo ufw allow from {source}) instead of iptables: "
                            "hand-made iptables rules are gone after a reboot",
    Code.UFW_NOT_AT_BOOT: "on {node} run sudo ufw enable (sets ENABLED=yes in /etc/ufw/ufw.conf) so the rules load at boot",
    Code.CLOCK_SKEW: "enable time synchronisation on {node} (sudo timedatectl set-ntp true) and check chrony/systemd-timesyncd",
    Code.LINK_MISSING: "check the ConnectX-7 driver on {node} (ibdev2netdev should list {device} ==> {netdev}) or fix the link in the cluster file",
    Code.LINK_DOWN: "check the QSFP cable on {node} {netdev} and its peer; then sudo ip link set {netdev} up and netplan apply",
    Code.UP_LINKS_DIFFER: "cable the same QSFP ports on every node: NVIDIA's cluster tools require the same Up links everywhere",
    Code.PORT_NOT_ACTIVE: "the RDMA port of {device} on {node} is not ACTIVE/LinkUp: reseat the cable, check the peer port",
    Code.LINK_SPEED: "check the QSFP cable (200G rated) and, behind a switch, the switch port speed setting for {node} {netdev}",
    Code.NETPLAN_MISSING: "write {path} on {node} with the QSFP interfaces (seed: link-local: [ ipv4 ]), sudo chmod 600 it, "
                          "then sudo netplan apply",
    Code.NETPLAN_MODE: "sudo chmod 600 {path} on {node} (netplan warns about and others can read a wider mode)",
    Code.NETPLAN_CONTENT: "add {netdev} to {path} on {node} and sudo netplan apply",
    Code.ADDRESS_MISSING: "give {netdev} on {node} the address {address} (netplan), or fix the cluster file",
    Code.SAME_SUBNET: "put each logical link of {node} on its own subnet (e.g. 169.254.0.0/16 and 192.168.101.0/24) in netplan",
    Code.DEFAULT_ROUTE_QSFP: "remove the default route through {netdev} on {node}: QSFP links are point-to-point (no gateway in netplan)",
    Code.MTU_MISMATCH: "set the same MTU on both ends of the link ({node} {netdev} and its peer) in netplan",
    Code.ROUTE_WRONG_DEV: "traffic from {node} to {peer} must leave through {netdev}: fix overlapping subnets or routes in netplan",
    Code.CABLE_WRONG_PEER: "move the cable at {node} {netdev} (now to {peer}) to {should}, as the topology says; in a ring "
                           "each node's port 0 goes to the next node's port 1, never port 0 to port 0",
    Code.CABLE_NOTHING: "{node} {netdev} reaches no port: seat its cable (link up at both ends: ip link) and join it to {should}",
    Code.CABLE_SWITCHED: "{node} {netdev} reaches a switch where the topology says a direct cable: cable it directly, or set "
                         "`topology: switch` and put every node's links on the switch",
    Code.CABLE_BESIDE_SWITCH: "{node} {netdev} is cabled straight to {peer} beside the switch: move that cable to the switch, "
                              "so every link of a switched cluster goes through it",
    Code.CABLE_PEER_MISSING: "{node} {netdev} reaches the switch but not {missing}: their cabling line says where that port "
                             "went; put it on this switch (or fix its switch port's VLAN)",
    Code.CABLING_UNKNOWN: "give {netdev} on {node} its IPv6 link-local address (sysctl -w net.ipv6.conf.{netdev}.disable_ipv6=0; "
                          "netplan link-local: [ipv6]) so `ping -6 -I {netdev} ff02::1` finds its peer; the cabling is not "
                          "checked until then",
    Code.PING: "check the cable, addresses and ufw on both ends of {node} {netdev} -> {peer}",
    Code.SSH_MESH: "give the cluster one shared key (NVIDIA's discover-sparks does it) so {node} reaches {peer} without a password, "
                   "as the same user, and record {peer}'s host key in {node}'s known_hosts",
    Code.GID_NOT_ROCE_V2: "use NCCL_IB_GID_INDEX={right_index} for {device} on {node} (the index holding RoCE v2 with the node's IPv4), "
                          "or set expect.roce_gid_index; the order can change after a link flap",
    Code.PORT_BLOCKED: "on {node}: sudo ufw allow from {source} to any port {port} proto tcp (or allow the whole QSFP subnet "
                       "{source}); seed: UFW must allow 169.254/16 and 192.168.101.0/24",
    Code.RDMA_BANDWIDTH: "check the cable and both ports' speed (ethtool), NCCL_IB_HCA and the GID index for {device}; "
                         "seed: about 109 Gb/s per logical link",
    Code.RDMA_RUN: "ib_write_bw could not run between {node} and {peer}: check perftest is installed, the port is open, the device is up",
    Code.MODEL_MISSING: "download {repo} into the Hugging Face cache on {node}, rank 0 (hf download {repo}, with HF_HOME or "
                        "HF_HUB_CACHE naming deploy.hf_cache), then sudo chmod -R a+rX its hub folder; gb10check sync then "
                        "copies it to the other nodes",
    Code.MODEL_NOT_COPIED: "copy {repo} from {head} (rank 0) to {node}: gb10check sync (rsync -a over the QSFP link, without "
                           "-L, after sudo chmod -R a+rX on {head}); if {head} lacks it too, download it there first",
    Code.MODEL_INCOMPLETE: "the download of {repo} on {node} is incomplete: resume it on rank 0 and sync again (rsync without -L)",
    Code.MODEL_DEREFERENCED: "the cache on {node} was copied with links followed (rsync -L or cp -L), doubling the disk use: "
                             "sync it again from rank 0 with rsync -a (no -L)",
    Code.MODEL_UNREADABLE: "sudo chmod -R a+rX the hub folder of {repo} on {node} (seed: rsync fails on trees/*.json otherwise)",
    Code.MODEL_DIFFERS: "copy the cache from {head} to {node} again (rsync -a over the QSFP link, without -L) and compare sizes",
    Code.MODEL_WEDGE: "use the FP8 checkpoint (seed: Qwen3.8-Flash-Next-FP8, 86.4 GiB per node) or more nodes; never start this one: "
                      "the driver spins in nv_alloc_system_pages and only a reboot ends it",
    Code.MODEL_TOO_BIG: "lower --max-model-len (halve it: the seed went 262144 -> 131072 -> 65536) or --max-num-seqs, or use a "
                        "smaller checkpoint (seed's troubleshooting table)",
    Code.CONTAINER_LIMIT_LOW: "raise deploy.container_memory_limit above the need (and below the machine's memory), or lower max_model_len",
    Code.MEMORY_LOW: "free memory on {node} before starting (stop other containers and jobs; sync; echo 3 | sudo tee /proc/sys/vm/drop_caches)",
    Code.PAGE_CACHE: "drop the page cache on {node} before loading (sync; echo 3 | sudo tee /proc/sys/vm/drop_caches): on unified "
                     "memory it fights the driver for pages",
    Code.COMPOSE_MISSING: "render and push the stack (scripts/compose-render) so {path} exists on {node}",
    Code.COMPOSE_DIFFERS: "the compose file must be identical on every node: copy {head}'s to {node} (scripts/compose-render pushes it)",
    Code.COMPOSE_NO_VLLM: "the compose file on {node} must run `vllm serve` (render it with scripts/compose-render)",
    Code.COMPOSE_SETTING: "set {setting} in the compose service on {node} (the field report's design; see cluster.example.yaml)",
    Code.COMPOSE_NO_MEMORY_LIMIT: "set deploy.resources.limits.memory (seed: 105G) on {node}: an overrun then kills the container, "
                                  "not the whole machine; keep restart: \"no\"",
    Code.COMPOSE_HEADLESS: "rank 1 must have --headless (seed: collective_rpc should not be called on follower node); "
                           "add it for NODE_RANK != 0 in the command on {node}",
    Code.COMPOSE_CUDAGRAPH_HYPHEN: "use -cc.cudagraph_mode, not hyphens (seed: cudagraph-mode Unexpected keyword argument, exit 2)",
    Code.COMPOSE_ARG: "pass {arg} {value} on {node}",
    Code.COMPOSE_ENV: "set {var}={value} in the compose environment on {node}",
    Code.COMPOSE_NO_OFFLINE: "set HF_HUB_OFFLINE: \"1\" in the compose environment on {node} (scripts/compose-render writes it): "
                             "the model is complete on every node; without it each rank asks the Hub at start-up and a "
                             "follower downloads the model itself, or a newer revision of it (spark-vllm-docker issue 262)",
    Code.COMPOSE_CACHE_NOT_MOUNTED: "mount {path} from one host folder, the same on every node (scripts/compose-render mounts "
                                    "deploy.cache_dir's vllm/, flashinfer/ and triton/ at /root/.cache/vllm, "
                                    "/root/.cache/flashinfer and /root/.triton): otherwise every start compiles the {tool} "
                                    "kernels again, and a JIT compile during inference has killed an engine",
    Code.ENV_FILE: "set {var}={value} in {node}'s .env",
    Code.NCCL_RUN: "nccl-tests did not complete across the nodes: check the SSH mesh, ufw on the QSFP subnets and that "
                   "nccl-tests and MPI are installed at the same path everywhere",
    Code.GPU_COMPUTE_LOW: "power {node} off at the wall (AC off for a minute, then on; a reboot does not clear it): a GB10 can "
                          "stick in a low-power state (SM clock near 800 MHz, about 20 W) that only an AC power-off clears; "
                          "if it persists, check cooling and the power supply",
    Code.GPU_CLOCK_LOW: "power {node} off at the wall (AC off for a minute, then on; a reboot does not clear the stuck low-power "
                        "state); active clock-event reasons under load: {reasons}",
    Code.GPU_COMPUTE_SPREAD: "power {node} off at the wall (AC off, then on; not a reboot): tensor parallelism runs at the slowest "
                             "node's pace; compare its SM clock and power with {fastest}'s in the measurements",
    Code.GPU_NOT_SAMPLED: "run the sampling by hand on {node} while a GPU job runs (nvidia-smi --query-gpu=clocks.sm,power.draw "
                          "--format=csv -lms 500) and read its error",
    Code.IMAGE_KERNELS: "use an image whose torch and Triton are built for this GPU ({capability}; GB10 is sm_121: CUDA 13 "
                        "builds), pulled or copied the same to every node; the whole error: run `{command}` on {node}",
    Code.IMAGE_PTXAS_ARCH: "use an image built for {arch} (CUDA 13: a Triton whose ptxas knows {arch}), or point Triton at "
                           "the image's CUDA 13 ptxas: {ptxas_env}=/usr/local/cuda/bin/ptxas (the variable of the ptxas that refused) in the "
                           "compose environment (deploy.extra_environment) if the image has one (Triton issue 8539, vLLM "
                           "issues 29469 and 36835)",
    Code.IMAGE_NCCL_DIFFERS: "ship rank 0's image to {node} (docker save {image} | ssh {node} docker load) so torch loads the same "
                             "libnccl everywhere: two builds of one NCCL version can hang a two-node run after minutes",
    Code.IMAGE_NCCL_PIN: "use an image whose torch loads the pinned NCCL (deploy.nccl) or update the pin after checking the "
                         "new build; the library torch loads decides, not the image's NCCL_VERSION variable",
    Code.IMAGE_NCCL_ENV_STALE: "trust the library, not the variable: NCCL_VERSION in {holder} is stale ({unstale})",
    Code.IMAGE_NCCL_SPLIT: "load one NCCL in the container: drop the LD_PRELOAD or VLLM_NCCL_SO_PATH that brings in the "
                           "second library, or replace torch's own (its wheel's nvidia/nccl/lib/libnccl.so.2) with the build "
                           "you mean, the same on every node; vLLM's tensor-parallel all-reduce uses pynccl's library",
    Code.NCCL_SOCKET: "NCCL fell back to sockets: check NCCL_IB_HCA ({hca}) names ACTIVE devices on every node and "
                      "NCCL_IB_GID_INDEX holds RoCE v2 (see test_roce_gid and test_rdma_port_active)",
    Code.NCCL_WRONG_VALUES: "data arrived corrupted: read the RDMA error counters (test_rdma_error_counters) and the kernel log "
                            "for Xid errors (test_kernel_log) on every node, reseat or replace the QSFP cable, and rerun "
                            "nccl-tests; do not serve over a path that corrupts data",
    Code.NCCL_CONF_CONFLICT: "give {key} one value: delete it from {file} ({place} on {node}: rebuild the image without it, or "
                             "edit the host's file), or, if the file's {value} is right, set {key}={value} in the compose "
                             "environment (deploy.extra_environment) on every node; the rank takes the compose environment's "
                             "{compose}, nccl-tests and anything else started without it take the file's",
    Code.NCCL_CONF_SILENT: "move {key} into the compose environment (deploy.extra_environment: {key}={value}) where every "
                           "node's setting is seen and compared, and delete it from {file} ({place} on {node}); NCCL reads "
                           "its environment first, then $NCCL_CONF_FILE or ~/.nccl.conf, then /etc/nccl.conf",
    Code.NCCL_RING_ENV: "set {var}={want} in the compose environment (deploy.extra_environment) on every node: in a ring "
                        "each port reaches ONE neighbour on its own subnet, and NCCL's own IB transport picks, per peer, "
                        "the HCA on that peer's subnet only with NCCL_IB_SUBNET_AWARE_ROUTING=1; without it stock NCCL "
                        "sends over the cable to the wrong neighbour and dies in ibv_modify_qp (error 110) at init. "
                        "NVIDIA's launch.sh --topology ring sets NCCL_IB_SUBNET_AWARE_ROUTING=1 and NCCL_NET_PLUGIN=none "
                        "(NVIDIA/dgx-spark-playbooks nvidia/playbook-nccl; spark-arena/sparkrun#174; "
                        "Blackwellboy/model-serving-minefield#115, trap 139); an image's net plugin brings its own "
                        "IB code that does not do this",
    Code.NCCL_RING_STOCK: "a ring of {nodes} runs only with NCCL_ALGO=Ring AND a patched NCCL: two nodes of a ring of four "
                          "share no cable, yet stock NCCL also connects a tree (even under NCCL_ALGO=Ring) and dies in "
                          "ncclTransportTreeConnect right after `Connected all rings` (RoCE queue pairs do not follow the "
                          "IP route through a third node). Put a switchless-ring NCCL in the image (alexellis/switchless-"
                          "nccl, FujitsuPolycom/sparkring; MiaAI-Lab/DeepSeek-v4.1-Flash-DGX-Sparks#3), pin it with "
                          "deploy.nccl {{version, build_id}} so test_image_nccl proves every rank loads it, and set "
                          "NCCL_ALGO=Ring and NCCL_SWITCHLESS_RING_ONLY=1; NVIDIA's own launch.sh refuses rings of more "
                          "than three. Or put the four nodes behind a switch (topology: switch)",
    Code.NCCL_RING_ONLY: "drop {var} from the compose environment: it is for a switchless ring of four (no tree across "
                         "nodes that share no cable); on a {topology} every node reaches every other and NCCL's tree "
                         "serves the small messages of each decode step. NVIDIA's launch.sh --topology direct|switch "
                         "adds no NCCL variable",
    Code.NCCL_RING_VERSION: "use NCCL 2.30 or later in {image} on a ring (NVIDIA's playbook builds v2.30.7-1): "
                            "NCCL_IB_SUBNET_AWARE_ROUTING, the ring's routing, is not in {version}, which ignores it and "
                            "sends over the wrong cable; then pin it with deploy.nccl",
    Code.NCCL_NET_PLUGIN: "set NCCL_NET_PLUGIN=none in the compose environment (deploy.extra_environment) so NCCL uses its own "
                          "IB transport over the QSFP RoCE links, or take {plugin} out of {image}'s library path; an external "
                          "plugin (NGC images ship HPC-X's nccl-rdma-sharp-plugins: `Using network IBext` in an NCCL_DEBUG=INFO "
                          "log) replaces NCCL's own IB code, with its own reading of the NCCL_IB_* variables",
    Code.NCCL_BANDWIDTH: "check both links carry RoCE (NCCL_IB_HCA lists both devices), the cable, and the link speed; "
                         "Dell GB10 pair: 22.96 GB/s all_gather bus bandwidth; NVIDIA's pass figures for all_gather_perf "
                         "at 16G: 21.875 GB/s on a pair or a switch, 10 GB/s on a ring of three. One link pair alone under "
                         "its floor: that cable, its two ports and their ib_write_bw (test_ib_write_bw on the same link)",
    Code.COLLECTIVES_RUN: "read the rank's NCCL WARN lines in the canary's output: a rank that never met the others is the "
                          "rendezvous (MASTER_ADDR reachable over the QSFP subnet, ufw open between the nodes, the same "
                          "image on every node); a failed connection is NCCL_SOCKET_IFNAME or NCCL_IB_HCA naming what "
                          "that node lacks (each node's compose environment names its own)",
    Code.NCCL_CHANNEL_MAP: "give each node's service its own NCCL_IB_HCA and NCCL_SOCKET_IFNAME, the devices of the links it is "
                           "cabled on (ibdev2netdev on that node), and keep both ends of each cable in one subnet: a channel "
                           "whose ends sit on two subnets crosses between links or is routed",
    Code.COLLECTIVES_BANDWIDTH: "check both links carry RoCE (channel lines via NET/IB on both HCAs), the cable and the "
                                "link speed (test_link_speed), and that nothing else loads the GPUs or the links",
    Code.NCCL_LATENCY: "small all_reduces are what each decode step waits on: check the channel lines are NET/IB (not "
                       "Socket), NCCL_IB_GID_INDEX, no NCCL_PROTO/NCCL_ALGO override in the environment, and the nodes' "
                       "CPU governor and load",
    Code.VERSION_DIFFERS: "make the {what} of {node} what {head} runs (the same BIOS via fwupdmgr or the vendor's package, "
                          "the same ConnectX firmware via the OS image's firmware updater, the same GRUB_CMDLINE_LINUX_DEFAULT "
                          "then sudo update-grub), then reboot {node}",
    Code.KNOWN_BAD_VERSION: "{advisory_fix} (source: {source})",
    Code.CDI_SPEC_STALE: "generate the CDI spec again for the loaded driver on {node}: sudo nvidia-ctk cdi generate "
                         "--output={path} (and remove any other spec left from the old driver); a spec naming another "
                         "driver's libraries stops containers from starting (libEGL_nvidia.so.<old>: no such file)",
    Code.CDI_SPEC_MISSING: "generate the CDI spec on {node}: sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml "
                           "(its runtime gives containers the GPU through CDI: without a spec none starts)",
    Code.TOOLKIT_DIFFERS: "run the same NVIDIA Container Toolkit, configured the same way, on every node: install {head}'s "
                          "release on {node} (sudo apt-get install nvidia-container-toolkit=<version>-1 "
                          "nvidia-container-toolkit-base=<version>-1 libnvidia-container-tools=<version>-1 "
                          "libnvidia-container1=<version>-1), copy {head}'s /etc/nvidia-container-runtime/config.toml and "
                          "/etc/docker/daemon.json, then sudo systemctl restart docker",
    Code.COMPOSE_ENTRYPOINT: "keep the image's own entrypoint in front of yours in the compose service on {node}: entrypoint: "
                             "[\"{image_entrypoint}\", {override}] (it runs its CUDA forward-compatibility set-up, then "
                             "execs the rest), or drop the entrypoint: override and pass the script as the command; for the compose file "
                             "gb10check renders, set deploy.image_entrypoint: [\"{image_entrypoint}\"] in the cluster file",
    Code.COMPOSE_IMAGE_UNPINNED: "pin the image by digest in the compose file (image: {name}@{digest}) and in deploy.image, "
                                 "so an unattended pull cannot swap it under the same tag; pull a new one deliberately, "
                                 "on every node at once",
    Code.REBOOT_REQUIRED: "reboot {node} before deploying (upgrades installed since boot take effect then; a driver upgrade "
                          "otherwise shows up later as an NVML mismatch)",
    Code.DRIVER_NOT_HELD: "scripts/hold-driver --node {node} (shows, then holds them; --blacklist also keeps them out of "
                          "unattended-upgrades through /etc/apt/apt.conf.d/51gb10check-hold-nvidia), or by hand on {node}: "
                          "{hold_command}; upgrade the driver deliberately on every node at once, then reboot (source: {source})",
    Code.KERNEL_LOG: "read the lines ({what}) in sudo journalctl -k -b on {node}: an Xid names the GPU fault (NVIDIA's Xid "
                     "catalogue), NV_ERR_NO_MEMORY and OOM kills mean unified memory ran out (lower gpu_memory_utilization or "
                     "max_model_len), mlx5 link down means the cable or the peer port flapped; a reboot clears the log",
    Code.KERNEL_PCIE_FATAL: "power {node} off at the wall and on before deploying, update its BIOS and ConnectX-7 firmware "
                            "(sudo fwupdmgr update) and reseat its QSFP cables; if it comes back, ask the vendor (the same port "
                            "failing again is hardware). A failure, not a warning: a fatal uncorrectable PCIe error reset the "
                            "link of the device the lines name (on a GB10, 0000:01:00 and 0002:01:00 are the ConnectX-7 behind "
                            "the root ports 0000:00:00.0 and 0002:00:00.0, 000f:01:00 the GPU), and what ran over it (RDMA "
                            "queues, NCCL communicators) is gone; a head wedged after one (MiaAI-Lab DSpark issue 146)",
    Code.KERNEL_NIC_RESET: "power {node} off at the wall and on before deploying, then read the AER lines before these "
                           "(kernel-pcie-fatal) for the cause. A failure, not a warning: PCI error recovery reset a ConnectX-7 "
                           "(mlx5_pci_err_detected, mlx5_pci_slot_reset), and its RDMA queues and every NCCL communicator over "
                           "them died with it; a head wedged after one (MiaAI-Lab DSpark issue 146)",
    Code.KERNEL_LOCKUP: "reboot {node} before deploying; if the lines name nvidia or a vLLM process, lower "
                        "gpu_memory_utilization or max_model_len before serving again. A failure, not a warning: a CPU was "
                        "stuck in the kernel for tens of seconds (the task in brackets), and a GPU driver spinning in "
                        "nv_alloc_system_pages (a model too big for unified memory, see model-wedge) or a wedged device ends "
                        "only with a reboot",
    Code.KERNEL_HUNG_TASK: "read the task the lines name and its stack (sudo journalctl -k -b on {node}); if it is a GPU "
                           "process (python3, VLLM::EngineCore, nvidia-smi) or still in state D (ps -eo stat,pid,comm | grep "
                           "'^D'), reboot {node} before deploying. A warning, not a failure: the task waited in the kernel "
                           "past the hung-task timeout and may since have gone on; heavy writeback (a model copy, a full "
                           "disk) prints it too",
    Code.KERNEL_THERMAL: "check the cooling of {node} (air intake and exhaust free, fans running, room temperature, nothing "
                         "stacked on it), then power it off and on; do not serve on it until it stays below its trip points "
                         "under load. A failure, not a warning: it reached a critical temperature this boot, and the kernel "
                         "shuts a node down there",
    Code.KERNEL_HOT: "check the cooling of {node} (air intake and exhaust free, fans running, room temperature; for "
                     "mlx5_core lines the air over the ConnectX-7 and its QSFP modules, whose temperatures ethtool -m "
                     "shows). A warning, not a failure: a part ran hot but below its critical trip point, and serves "
                     "(a CPU throttled, slower); at the trip point the kernel shuts the node down (kernel-thermal)",
    Code.RDMA_ERROR_COUNTERS: "errors on {device} port {port} of {node}: reseat or replace the QSFP cable and check the peer "
                              "port; the counters in /sys/class/infiniband/{device}/ports/{port}/counters reset at reboot",
    Code.NM_DHCP_QSFP: "scripts/nm-release-qsfp --node {node} (shows, then turns its autoconnect off and takes it down; "
                       "--delete deletes it), or by hand on {node}: {delete}; the QSFP addresses come from netplan "
                       "(dgx-spark-playbooks issue 56: DHCP profiles left on the QSFP ports)",
    Code.ROCE_MTU: "set the same MTU on both ends of {netdev} in netplan (mtu: 9000, or 4200: RoCE then runs at 4096) and "
                   "sudo netplan apply on {node} and its peer; if ibv_devinfo still shows the old active_mtu, take the "
                   "link down and up (sudo ip link set {netdev} down; sudo ip link set {netdev} up)",
    Code.DISK_FULL: "free space on {mount} of {node} (docker system prune, docker image prune -a, old models under the "
                    "Hugging Face cache: huggingface-cli delete-cache) or move the cache to a larger disk: {need} must fit "
                    "(rsync stops with 'No space left on device')",
    Code.DISK_LOW: "free space on {mount} of {node} (docker image prune -a, huggingface-cli delete-cache): {need} with the "
                   "margin for logs and the vLLM, flashinfer and Triton caches; a nearly full disk also loads slower (seed: "
                   "850 s against 300 s on the other node)",
    Code.DISK_SLOW: "find what slows the disk of {node} (a nearly full filesystem, another job reading, a slower drive: "
                    "sudo iostat -x 1, df -h); or raise --distributed-timeout-seconds (deploy.distributed_timeout_s) above "
                    "the slowest node's load time: the other ranks wait for it (seed: 300 s on one node, 850 s on the "
                    "fuller, slower one)",
    Code.PATH_MTU: "set one MTU on both ends of the link ({node} {netdev} and {peer}) and on any switch port between "
                   "them, in netplan (9000 or 4200 everywhere, or 1500 everywhere): a jumbo MTU on one end only drops every "
                   "full-sized frame while pings pass (dgx-spark-playbooks PR 103)",
    Code.PCIE_DEGRADED: "update the BIOS of {node} (sudo fwupdmgr refresh && sudo fwupdmgr update, or the vendor's BIOS "
                        "package: GB10 BIOS releases before April 2026 train the second ConnectX-7 controller at Gen5 x2), power "
                        "it off and on, then read `sudo lspci -vv -s {function}` again (LnkSta should say {want}); if it "
                        "still trains low on a current BIOS, ask the vendor (the controller's upstream port may have fewer lanes "
                        "wired) and expect that port's RDMA bandwidth to halve (source: {source})",
    Code.RAY_MISSING: "the image {image} has no Ray on {node} (vLLM 0.18+ dropped ray from its dependencies; dgx-spark-playbooks "
                      "issues 75 and 109: `ray: command not found`): build an image FROM it with pip install 'ray[default]' at "
                      "the version every node runs, copy it to every node (gb10check sync), or use an image that ships Ray",
    Code.RAY_VERSION_DIFFERS: "run the same image on every node (gb10check sync copies {head}'s to {node}): Ray refuses a node "
                              "started with another Ray or Python version than the head's",
    Code.RAY_MEMORY_MONITOR: "set RAY_memory_monitor_refresh_ms=0 in the Ray service's environment on {node}, as NVIDIA's "
                             "playbook does: Ray's memory monitor otherwise kills vLLM's workers while the model fills unified "
                             "memory (OutOfMemoryError: 1 worker(s) were killed ...)",
    Code.RAY_PORT_NOT_ALLOWED: "on {node}: sudo ufw allow from {source} to any port {port} proto tcp (or the whole QSFP subnet: "
                               "sudo ufw allow from {source}); the other Ray nodes connect to its {what}",
    Code.RAY_NAMES_DIFFER: "vLLM copies the head's NCCL_*, GLOO_* and VLLM_* variables to every Ray worker: give {node} the "
                           "interface and RDMA device names {head} has ({names}: cable the same QSFP port on every node), or "
                           "use deploy.executor: mp, whose ranks read their own compose file",
    Code.RAY_NODE_MISSING: "{node} is not in the Ray cluster: read its Ray container's log (docker logs gb10-ray on {node}), "
                           "check it reaches the head's GCS at {gcs} over the QSFP link (ufw, test_port_open) with the same "
                           "image, then start its Ray worker again",
    Code.RAY_NODE_ADDRESS: "start {node}'s Ray with --node-ip-address={address} and VLLM_HOST_IP={address} (its QSFP address, "
                           "what run_cluster.sh passes): registered elsewhere, vLLM's placement group never fits (No available "
                           "node types can fulfill resource request {{'GPU': 1.0, 'node:...': 0.001}}; spark-vllm-docker issue 227)",
    Code.RAY_GPUS: "check the GPU inside each node's Ray container (docker exec gb10-ray nvidia-smi -L: the NVIDIA container "
                   "toolkit and the compose file's GPU reservation), then restart Ray there: --tensor-parallel-size "
                   "{gpus} needs {gpus} GPUs in the cluster",
    Code.COMPOSE_RAY_ROLE: "rank 0 runs the Ray head (ray start --head --port={port}) and every other rank a worker (ray start "
                           "--address={gcs}): fix the command on {node} (scripts/compose-render writes it)",
    Code.API_DOWN: "start the stack (rank 0 first, then the followers with --headless) and wait for 'Application startup "
                   "complete' on rank 0; if it is up, check ufw allows the API port ({port}) and serving.base_url",
    Code.API_KEY: "the server requires an API key: export it in {env} (the cluster file names the variable, never the key)",
    Code.API_ON_FOLLOWER: "{node} answers on the API port: its vLLM runs a full engine; start every rank but 0 with --headless",
    Code.API_TIMEOUT: "the server took {request} but sent no answer in time: read rank 0's log; a follower that died or a "
                      "rendezvous dropped by ufw leaves rank 0 hanging with no error (seed): stop every rank, start rank 0 "
                      "first, then the followers",
    Code.API_ERROR: "the server refused {request} with {status}: read the error and rank 0's log (docker compose logs); "
                    "if a proxy sits in front of rank 0, test against rank 0 directly",
    Code.MODEL_NOT_SERVED: "start vLLM with --served-model-name {name} (clients ask for the model by that name)",
    Code.MODEL_ROOT: "the server loaded another checkpoint: set MODEL_ID={model} in every node's .env and restart the stack",
    Code.MAX_MODEL_LEN: "start vLLM with --max-model-len {value}",
    Code.ANSWER_WRONG: "the model answers wrongly: check the checkpoint (MODEL_ID), the chat template and the dtype; "
                       "compare with a single-node run of the same model",
    Code.REASONING_MISSING: "start vLLM with --reasoning-parser {parser} (and send chat_template_kwargs.enable_thinking)",
    Code.TOOL_CALL_MISSING: "start vLLM with --enable-auto-tool-choice --tool-call-parser {parser}, with a chat template "
                            "that renders `tools`",
    Code.STREAM_BROKEN: "a proxy between client and server may buffer or cut server-sent events; test against rank 0 directly",
    Code.DECODE_SLOW: "check both logical links carry NCCL over RoCE (see the network suite), that nothing else runs on the "
                      "nodes, and the compilation mode; seed: 22.6 tok/s eager, 23.3 with CUDA graphs on two PGX",
    Code.DECODE_FLOOR_UNKNOWN: "give serving.min_decode_tok_s (the decode rate you expect), or fix what keeps the floor "
                               "from being derived ({why}): `gb10check size --model ORG/NAME --tp N` reads the same files",
    Code.CONCURRENCY: "raise --max-num-seqs to {value} or the KV cache (gpu_memory_utilization); see the server log",
    Code.SWEEP_LEVEL: "the engine fails at {value} sequences at once: read rank 0's log for the kernel or allocation that "
                      "failed (a quantized kernel crashing at some batch sizes is fixed by another MoE/GEMM backend or "
                      "vLLM release); until then serve with --max-num-seqs under {value}",
    Code.TRAFFIC_ON_MGMT: "bind the ranks' sockets to the links in every node's .env and restart the stack: "
                          "GLOO_SOCKET_IFNAME={netdevs} (torch.distributed/Gloo), NCCL_SOCKET_IFNAME={netdevs} (NCCL's "
                          "bootstrap), VLLM_HOST_IP=<this node's link address> (vLLM's message queue and rank addresses), "
                          "and ray start --node-ip-address=<link address> under Ray",
    Code.FABRIC_UNSEEN: "deploy the stack across the nodes first; ss needs root (sudo) to see every socket",
    Code.ERROR_STATUS: "the server answered an unknown model with {status}: a proxy may rewrite errors; test against rank 0",
    Code.METRICS: "the /metrics endpoint is how load and KV cache use are watched: check --disable-log-stats is not set "
                  "and no proxy hides the path",
    Code.ENGINE_CONFIG: "{how}; then read rank 0's log ({log}): the engine's config line and its 'Using ... backend' lines "
                        "say what it resolved, and its warnings why",
    Code.ENGINE_ARG_IGNORED: "vLLM took {arg} but resolved another value: read the warning near it in rank 0's log ({log}) "
                             "(a flag this build or GPU does not support, or one another flag overrides) and pass what "
                             "the engine can run, or fix what overrides it",
    Code.ENGINE_FALLBACK: "the engine fell back to {kernel}, slower than this hardware's native kernels (profile {profile}: "
                          "{fallbacks} are fallbacks): use an image whose vLLM has the native kernels for this checkpoint and "
                          "GPU, or choose one (--moe-backend, --linear-backend); if {kernel} is meant, name it in "
                          "serving.expect_engine",
    Code.ENGINE_UNKNOWN_ENV: "vLLM does not know {variable} and ignores it: remove it from the compose environment or the .env, "
                             "and set what it was meant to set with the flag this vLLM has (--moe-backend, --attention-backend "
                             "...; `vllm serve --help=all`)",
    Code.SOAK_STALL: "a rank stopped answering mid-load: read every rank's log (docker logs gb10-vllm) for 'No available "
                     "shared memory broadcast block' and 'Watchdog caught collective operation timeout'; a frozen or dead rank "
                     "leaves the other waiting with no error. If it comes after 20-26 minutes of load: " + SOAK_NCCL_FIX,
    Code.SOAK_REQUEST_ERROR: "the server failed requests under load ({first}): read rank 0's log at that time; a 400 about the "
                             "context length means soak.prompt_tokens + soak.max_tokens exceed max_model_len",
    Code.SOAK_MEMORY_FLOOR: "unified memory on {node} fell under the floor ({floor} GiB) under load and the watchdog stopped every "
                            "rank: lower gpu_memory_utilization, max_num_seqs or max_model_len, stop whatever else runs on "
                            "{node}, drop its page cache before deploying; then restart every rank together",
    Code.SOAK_RANK_EXITED: "{node} (rank {rank}) exited mid-load ({cause}): the other ranks now wait on it; restart every rank "
                           "together (scripts/down, then scripts/deploy) and read its last log lines",
    Code.SOAK_HANG_SIGNATURE: SOAK_NCCL_FIX,
    Code.SOAK_NO_MEMORY: "the driver on {node} ran out of unified memory (NV_ERR_NO_MEMORY; a long prefill can hard-reset a GB10, "
                         "dgx-spark-playbooks issue 97): lower gpu_memory_utilization and max_model_len to leave headroom, "
                         "drop the page cache before starting, keep the container memory limit",
    Code.SOAK_ENGINE_ERROR: "{hint}: read {node}'s log around that line; restart every rank together",
    Code.SOAK_NO_REQUESTS: "no request completed during the soak: check test_health and the serving stage first, and that "
                           "soak.duration_s is longer than one request",
    Code.LONG_CONTEXT_REFUSED: "the server refused a {tokens}-token prompt: start vLLM with --max-model-len {max_model_len} (and "
                               "the KV cache to hold it), or lower soak.long_context_fraction",
    Code.LONG_CONTEXT_NONCE: "the model lost a fact at depth: check the model's real context length (rope scaling, "
                             "max_position_embeddings), the chat template and --max-model-len; a small model may need "
                             "soak.nonce_placement: end",
    Code.RANK_STOPPED: "rank {rank} on {node} stopped and every other rank waits on it: a paused container: `docker unpause "
                       "gb10-vllm` on {node}; a stopped process: `kill -CONT` it; a QSFP link down: bring it up (`ip link set "
                       "NETDEV up`, the cable, `gb10check check network`); else read its log (docker logs gb10-vllm). A TP "
                       "group that stalled rarely recovers: restart every rank together (scripts/down, then scripts/deploy)",
    Code.WATCH_NO_ANSWER: "the server did not answer the watch's one small request ({why}): read rank 0's log and the "
                          "evidence of every rank in the same tick; restart every rank together if one stopped",
    Code.WATCH_TTFT: "the first token came late: a rank that stopped or a server saturated by other load; read the tick's "
                     "rank evidence and /metrics (vllm:num_requests_waiting); raise watch.ttft_budget_s only for a reason",
    Code.WATCH_ITL: "the tokens came with long gaps: another rank slow or throttled (the tick's temperatures and clock-event "
                    "reasons), the QSFP links (`gb10check check network`), or a saturated server",
    Code.WATCH_MEMORY: "MemAvailable on {node} is under the floor while serving: something else took unified memory (docker "
                       "stats, ps), or the KV cache and page cache grew; stop the other work, drop the page cache, or "
                       "lower gpu_memory_utilization and redeploy",
    Code.WATCH_TEMPERATURE: "the GPU on {node} runs hot: check its airflow (vents, the unit's neighbours, the room), and "
                            "whether the engine's message queue busy-polls cores while idle; a GB10 slows, then powers off",
    Code.WATCH_THERMAL_SLOWDOWN: "the GPU on {node} slows its clocks for heat ({reasons}): check its airflow and the room; "
                                 "a count that keeps growing tick after tick precedes thermal power-offs",
    Code.WATCH_REBOOTED: "{node} rebooted since the last look: read `journalctl -b -1 -e` on it (the end of the previous boot "
                         "says whether it shut down or lost power), and its kernel log; its rank is gone: redeploy",
    Code.DEPTH_PP_SLOW: "prefill at depth {depth} is slow: check both links carry NCCL over RoCE, nothing else runs on the nodes, "
                        "the attention backend and chunked prefill settings; compare with llama-benchy on the same server "
                        "(bench/depth_sweep_vs_llama_benchy.py)",
    Code.DEPTH_TG_SLOW: "decode at depth {depth} is slow: check both links carry NCCL over RoCE, the KV cache dtype and the "
                        "attention backend; compare with llama-benchy on the same server (bench/depth_sweep_vs_llama_benchy.py)",
    Code.DEPTH_RUN: "a depth-sweep request failed: read the error and rank 0's log; lower soak.depths or soak.depth_prompt_tokens "
                    "if the prompt does not fit",
    Code.DOCKER_MISSING: "install docker on {node} (the GB10 image ships it: sudo apt install docker-ce, or docker.io)",
    Code.DOCKER_UNREACHABLE: "on {node}: start docker (sudo systemctl enable --now docker) and let the SSH user use it "
                             "(sudo usermod -aG docker {user}, then log in again)",
    Code.COMPOSE_V2_MISSING: "install compose v2 on {node} (sudo apt install docker-compose-plugin); the v1 `docker-compose` "
                             "does not read the stack's deploy.resources GPU reservation",
    Code.IMAGE_MISSING: "copy the image from rank 0: gb10check sync (docker save {image} | ssh {node} docker load)",
    Code.IMAGE_ARCH: "use an image built for {arch} on {node} (pull it with --platform linux/{arch}, or copy rank 0's with "
                     "gb10check sync; GB10 machines are arm64)",
    Code.IMAGE_LAYERS_DIFFER: "copy the image from {head} instead of building or pulling it again on {node}: gb10check sync "
                              "(docker save {image} | ssh {node} docker load); every rank must run the same bits",
    Code.CONTAINER_NO_GPU: "install and configure the NVIDIA container toolkit on {node} (sudo nvidia-ctk runtime configure "
                           "--runtime=docker && sudo systemctl restart docker), then retry `{command}`",
    Code.START_MEMORY_PROCESS: "a GPU process holds the memory on {node}: stop it (test_no_gpu_process_left names each, with "
                                 "its container or pid), then run the preflight again",
    Code.START_MEMORY_PAGE_CACHE: "drop the page cache on {node} ({cache} GiB; {short} GiB short): sync; echo 3 | sudo tee "
                                  "/proc/sys/vm/drop_caches, just before deploy (a model copy or read refills it)",
    Code.START_MEMORY_REBOOT: "reboot {node}: with no GPU process and the page cache counted, {free} GiB free is under an idle "
                              "node's; memory held after an abnormal exit comes back only with a reboot",
    Code.START_MEMORY_UTILIZATION: "lower gpu_memory_utilization from {utilization} to {fits} or less ({short} GiB short of "
                                   "{need} GiB): this node, idle, has {free} GiB free (some kernel/driver pairs take 8-9 GiB "
                                   "more at start)",
    Code.GPU_PROCESS_LEFT: "stop it on {node} before deploy ({stop}); a VLLM::EngineCore left after its API server was "
                           "killed keeps its memory until it is killed",
    Code.STALE_CONTAINER: "stop it before deploying: on {node} run `docker compose down` in {workdir} (or docker rm -f {name}); "
                          "a second engine on the node holds unified memory the new one needs",
    Code.COMMAND_TIMEOUT: "run `{command}` on {node} by hand and see where it hangs; raise ssh.command_timeout_s if it is only slow",
    Code.COMMAND_FAILED: "run `{command}` on {node} by hand and read its error",
    Code.GARBLED: "run `{command}` on {node} by hand and compare its output with what gb10check expects "
                  "(`gb10check parse {kind} FILE` shows what the suite reads from a saved output)",
    Code.DRY_RUN_FAILED: "run `{command}` on {node} by hand and read why the dry run could not start",
    Code.TOOL_MISSING: "install {package} on {node} (it provides `{tool}`), then run the checks again",
    Code.SUDO_REFUSED: "let {user} run sudo without a password on {node}: sudo visudo -f /etc/sudoers.d/zz-gb10check and "
                       "write the line `{user} ALL=(ALL) NOPASSWD: ALL` (visudo checks it; sudo follows the last line that "
                       "matches, and zz- reads after the other drop-ins), or connect as root; then run the checks again",
    Code.SUDO_MISSING: "install sudo on {node} (apt install sudo) and give the SSH user passwordless sudo, or connect as root",
    Code.NO_RDMA: "on {node}: `ls /sys/class/infiniband` and `lspci -d 15b3:` should list the ConnectX-7; load its driver "
                  "(sudo modprobe mlx5_ib) or reseat the card, then run the checks again",
    Code.PREREQUISITE: "fix what {check} reports on {node} first, then run the checks again",
    Code.UNKNOWN_NEED: "make {what} readable on {node} ({how}), then run the checks again",
    Code.NOT_RECORDED: "record a run that includes it (`pytest --record DIR` with the check selected, on the cluster), or run "
                       "the check live against the cluster",
}

# The codes of "could not check": reported as NOT CHECKED, counted apart, refused by the gate.
NOT_CHECKED = frozenset({Code.COMMAND_TIMEOUT, Code.COMMAND_FAILED, Code.GARBLED, Code.DRY_RUN_FAILED,
                         Code.TOOL_MISSING, Code.SUDO_REFUSED, Code.SUDO_MISSING, Code.NO_RDMA, Code.PREREQUISITE,
                         Code.UNKNOWN_NEED, Code.NOT_RECORDED, Code.CABLING_UNKNOWN,
                         Code.DECODE_FLOOR_UNKNOWN, Code.FABRIC_UNSEEN})

# The node cannot be reached or refuses the runner (remote.NodeUnreachable's kinds): its reachability check fails with
# the code, its other checks are not checked for the same cause, told once.
REACH = frozenset({Code.SSH_NO_ROUTE, Code.SSH_REFUSED, Code.SSH_TIMEOUT, Code.SSH_NAME_UNRESOLVED, Code.HOST_KEY_UNKNOWN,
                   Code.HOST_KEY_CHANGED, Code.SSH_KEY_REFUSED, Code.NODE_UNREACHABLE})


def fix(code: Code, **params) -> str:
    return REMEDIES[code].format_map(_Blank(params))


class _Blank(dict):
    def __missing__(self, key):  # a remedy never fails to print for want of a parameter
        return "{" + key + "}"
