"""Capture-based judge tests for the failure codes no fault scenario proves: each test feeds a judge of
gb10check/checks/ facts parsed from real outputs (public captures in ../shared/captures, ours under
selftests/captures/, or a real command run here), asserts the code and the message (seen, expected, fix),
and that the judge says nothing for the healthy counterpart. The last test checks that every failure code
is proven somewhere: by a scenario on the simulated cluster, or by a judge test like these."""

import json
import re
import subprocess
from pathlib import Path

import pytest

from gb10check import compose, gather
from gb10check.checks import compose as compose_lint
from gb10check.checks import container, firewall, host, links, model
from gb10check.checks.nccl import judge_nccl
from gb10check.cluster import Expect, Link, load_cluster
from gb10check.facts import parse
from gb10check.remedies import NOT_CHECKED, Code
from gb10check.sim import model_files

from .conftest import read_capture
from .test_compose_lint import dry_run_here, facts_for, lint, our_env

REPO = Path(__file__).resolve().parent.parent
SEED = REPO.parent / "shared" / "seed" / "000_a8e6f903eaefa255.txt"
CLUSTER = load_cluster(REPO / "cluster.example.yaml")
HEAD = CLUSTER.node("thinkstationpgx-30")


def with_deploy(**changes):
    return CLUSTER.model_copy(update={"deploy": CLUSTER.deploy.model_copy(update=changes)})


def codes(findings):
    return [(f.code, f.where, f.warning) for f in findings]


# ---- host: driver, clock ----------------------------------------------------------------------

# What a node without the NVIDIA driver answers to the suite's two driver commands (gather.PROC_DRIVER and
# gather.DRIVER_QUERY, stdout and stderr together as gather.text reads them): GNU cat's error for the missing
# /proc file, and nvidia-smi's message when no kernel module answers.
NO_PROC_VERSION = "cat: /proc/driver/nvidia/version: No such file or directory\n"
SMI_NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
                 "NVIDIA driver is installed and running.\n\n")


@pytest.mark.parametrize("proc, shown", [(NO_PROC_VERSION, "cat: /proc/driver/nvidia/version: No such file or directory"),
                                         ("", "missing")])
def test_no_driver_is_reported(proc, shown):
    [f] = host.judge_driver("pgx", proc, SMI_NO_DRIVER)
    assert codes([f]) == [(Code.NO_DRIVER, "pgx", False)]
    assert f.text == (f"[no-driver] pgx: saw /proc/driver/nvidia/version: {shown}; expected an NVIDIA kernel module version\n"
                      "  fix: install the NVIDIA driver on pgx or check that the module is loaded (lsmod | grep nvidia)")
    # Healthy: a real GB10's /proc/driver/nvidia/version and nvidia-smi naming the same driver.
    proc_ok = read_capture("nvidia_smi/gb10-proc-driver-nvidia-version-580.126.09-idx52511083852.txt")
    assert host.judge_driver("edgexpert", proc_ok, "580.126.09\n") == []


def test_no_driver_is_reported_by_driver_parity_when_nvidia_smi_names_none():
    # test_driver_same_as_head: the installed driver of each node is what nvidia-smi names (host.installed_driver).
    # Ours: what a real H200 node's nvidia-smi names (its driver_version column), as gather.DRIVER_QUERY prints it.
    version = parse("nvidia_smi_query", read_capture("ours/nvidia_smi/h200-query-gpu-csv-noheader.txt"))[0]["driver_version"]
    ours = host.installed_driver(f"{version}\n")
    assert ours == "580.159.04"
    # nvidia-smi printed nothing at all (host.installed_driver reads its error messages as a version, so only an
    # empty output reaches no-driver here).
    missing = host.installed_driver("")
    assert missing is None
    [f] = host.judge_driver_same("thinkstationpgx-32", "thinkstationpgx-30", missing, ours)
    assert codes([f]) == [(Code.NO_DRIVER, "thinkstationpgx-32", False)]
    assert f.text == ("[no-driver] thinkstationpgx-32: saw nvidia-smi reports no driver version (see test_driver_parity); "
                      "expected an installed NVIDIA driver\n  fix: install the NVIDIA driver on thinkstationpgx-32 or check "
                      "that the module is loaded (lsmod | grep nvidia)")
    assert host.judge_driver_same("thinkstationpgx-32", "thinkstationpgx-30", ours, ours) == []


@pytest.mark.parametrize("skew", [2.5, -3.0])
def test_clock_skew_is_reported(skew):
    [f] = host.judge_clock("thinkstationpgx-32", skew, 1.0, 0.05)
    assert codes([f]) == [(Code.CLOCK_SKEW, "thinkstationpgx-32", False)]
    assert f.text == (f"[clock-skew] thinkstationpgx-32: saw clock {skew:+.2f} s from the runner's; expected within 1.0 s\n"
                      "  fix: enable time synchronisation on thinkstationpgx-32 (sudo timedatectl set-ntp true) and check "
                      "chrony/systemd-timesyncd")
    assert host.judge_clock("thinkstationpgx-32", 0.4, 1.0, 0.05) == []
    assert host.judge_clock("thinkstationpgx-32", -1.1, 1.0, 0.2) == []  # within the measurement's own uncertainty


# ---- firewall ---------------------------------------------------------------------------------

# /etc/ufw/ufw.conf as the ufw package installs it (jdstrand/ufw conf/ufw.conf; Debian and Ubuntu ship it so):
# ENABLED=no until `ufw enable` sets it to yes.
UFW_CONF_SHIPPED = """# /etc/ufw/ufw.conf
#

# Set to yes to start on boot. If setting this remotely, be sure to add a rule
# to allow your remote connection before starting ufw. Eg: 'ufw allow 22/tcp'
ENABLED=no

# Please use the 'ufw' command to set the loglevel. Eg: 'ufw logging medium'.
# See 'man ufw' for details.
LOGLEVEL=low
"""


def test_ufw_not_at_boot_is_reported():
    # The sim's real ufw (rules loaded now, persisted in user.rules), with the conf as shipped: gone after a reboot.
    status = parse("ufw_status", read_capture("ours/ufw/sim-ufw-status-verbose-rank0.txt"))
    rules = parse("ufw_user_rules", read_capture("ours/ufw/sim-user.rules-rank0.txt"))
    fw = CLUSTER.expect.firewall
    sources, ports = [str(s) for s in fw.sources], fw.ports
    [f] = firewall.judge("thinkstationpgx-30", status, rules, UFW_CONF_SHIPPED, "", sources, ports)
    assert codes([f]) == [(Code.UFW_NOT_AT_BOOT, "thinkstationpgx-30", False)]
    assert f.text == ("[ufw-not-at-boot] thinkstationpgx-30: saw ENABLED is not yes in /etc/ufw/ufw.conf; expected ufw enabled "
                      "at boot (its rules loaded after a reboot)\n  fix: on thinkstationpgx-30 run sudo ufw enable (sets "
                      "ENABLED=yes in /etc/ufw/ufw.conf) so the rules load at boot")
    enabled = UFW_CONF_SHIPPED.replace("ENABLED=no", "ENABLED=yes")
    assert firewall.judge("thinkstationpgx-30", status, rules, enabled, "", sources, ports) == []


# ---- links ------------------------------------------------------------------------------------


def test_link_missing_is_reported():
    # An IGX Orin's ConnectX-7 under the classic names: none of the GB10's RDMA devices is there.
    igx = parse("ibdev2netdev", read_capture("ibdev2netdev/igx-orin-cx7-mlx5-eth-names-holoscan-docs.txt"))
    found = links.judge_ibdev2netdev("igx", HEAD.links, igx)
    assert codes(found) == [(Code.LINK_MISSING, "igx:enp1s0f0np0", False), (Code.LINK_MISSING, "igx:enP2p1s0f0np0", False)]
    assert found[0].text == ("[link-missing] igx:enp1s0f0np0: saw no rocep1s0f0 in ibdev2netdev; expected rocep1s0f0 ==> "
                             "enp1s0f0np0\n  fix: check the ConnectX-7 driver on igx (ibdev2netdev should list rocep1s0f0 ==> "
                             "enp1s0f0np0) or fix the link in the cluster file")
    # A GB10 whose device maps to another netdev than the cluster file says.
    gb10 = parse("ibdev2netdev", read_capture("ibdev2netdev/gb10-blog-port0-up.txt"))
    wrong = Link(netdev="enp1s0f1np1", rdma_device="rocep1s0f0", address="169.254.94.252/16")
    [f] = links.judge_ibdev2netdev("gb10-1", [wrong], gb10)
    assert f.code is Code.LINK_MISSING
    assert f.text.startswith("[link-missing] gb10-1:enp1s0f1np1: saw rocep1s0f0 ==> enp1s0f0np0; expected rocep1s0f0 ==> "
                             "enp1s0f1np1\n  fix: check the ConnectX-7 driver on gb10-1")
    # Healthy: the same real GB10 against the cluster file's port-0 links.
    assert links.judge_ibdev2netdev("gb10-1", HEAD.links, gb10) == []


def test_link_missing_is_reported_by_the_port_check():
    # test_rdma_port_active: the IGX's real ibstat lists mlx5_0/mlx5_1, no rocep1s0f0.
    igx = parse("ibstat", read_capture("rdma_gids_devinfo/igx-orin-cx7-ibstat-eth-and-ib-holoscan-docs.txt"))
    [f] = links.judge_port("igx", HEAD.links[0], igx)
    assert codes([f]) == [(Code.LINK_MISSING, "igx:enp1s0f0np0", False)]
    assert f.text.startswith("[link-missing] igx:enp1s0f0np0: saw no /sys/class/infiniband/rocep1s0f0; expected the RDMA "
                             "device present\n  fix: check the ConnectX-7 driver on igx")
    # Healthy: a real GB10 OEM machine's sysfs with port 1 cabled, its link on rocep1s0f1.
    hp = parse("ib_sysfs", read_capture("rdma_gids_devinfo/hp-zgx-nano-gb10-sysfs-port-rate-state-idx27283978185.txt"))
    assert links.judge_port("zgx", Link(netdev="enp1s0f1np1", rdma_device="rocep1s0f1", address="169.254.1.1/16"), hp) == []


def test_up_links_differ_is_reported():
    spark1, spark2 = (links.up_links(parse("ibdev2netdev", read_capture(f"ibdev2netdev/dgxspark-playbook-spark{i}-port0-up.txt")))
                      for i in (1, 2))
    # Healthy: NVIDIA's own cabled pair, both on port 0.
    assert links.judge_same_up_links("spark-bd26", "spark-5c2d", spark2, spark1) == []
    port1 = links.up_links(parse("ibdev2netdev", read_capture("ibdev2netdev/spark-vllm-docker-networking-port1-up.txt")))
    [f] = links.judge_same_up_links("spark", "spark-5c2d", port1, spark1)
    assert codes([f]) == [(Code.UP_LINKS_DIFFER, "spark", False)]
    assert f.text == ("[up-links-differ] spark: saw Up: roceP2p1s0f1->enP2p1s0f1np1, rocep1s0f1->enp1s0f1np1; expected Up: "
                      "roceP2p1s0f0->enP2p1s0f0np0, rocep1s0f0->enp1s0f0np0 as on spark-5c2d\n"
                      "  fix: cable the same QSFP ports on every node: NVIDIA's cluster tools require the same Up links everywhere")


def seed_netplan() -> str:
    """The field report's /etc/netplan/40-cx7.yaml (its heredoc)."""
    if not SEED.exists():
        pytest.skip(f"the field report is not at {SEED}")
    text = SEED.read_text()
    start = text.index("40-cx7.yaml > /dev/null <<EOF\n")
    body = text[text.index("\n", start) + 1:]
    return body[:body.index("\nEOF")] + "\n"


def test_netplan_missing_is_reported():
    path = CLUSTER.expect.netplan_file
    # `stat -c %a` failed (the file does not exist): the check passes mode None.
    [f] = links.judge_netplan("thinkstationpgx-30", path, None, "", HEAD.links)
    assert codes([f]) == [(Code.NETPLAN_MISSING, "thinkstationpgx-30", False)]
    assert f.text == ("[netplan-missing] thinkstationpgx-30: saw no /etc/netplan/40-cx7.yaml; expected /etc/netplan/40-cx7.yaml "
                      "describing the QSFP links\n  fix: write /etc/netplan/40-cx7.yaml on thinkstationpgx-30 with the QSFP "
                      "interfaces (seed: link-local: [ ipv4 ]), sudo chmod 600 it, then sudo netplan apply")
    # Healthy: the field report's own file, mode 600, for the two interfaces it configures.
    seed_links = [Link(netdev="enp1s0f0np0", rdma_device="rocep1s0f0", address="169.254.94.252/16"),
                  Link(netdev="enp1s0f1np1", rdma_device="rocep1s0f1", address="169.254.94.253/16")]
    assert links.judge_netplan("thinkstationpgx-30", path, "600\n", seed_netplan(), seed_links) == []


# ---- model: cache and fit ---------------------------------------------------------------------


def listing_of(cluster) -> model.CacheListing:
    """The suite's own listing command (gather.model_listing), run here on a real folder, read as the check reads it."""
    out = subprocess.run(["bash", "-c", gather.model_listing(cluster)], capture_output=True, text=True, timeout=30)
    return model.parse_listing(out.stdout if out.returncode == 0 else "")


def hf_cache(root: Path, repo: str, snapshot: bool) -> str:
    """A Hugging Face hub cache of `repo` laid out as huggingface_hub writes it: blobs, refs, snapshot links into blobs."""
    base = Path(model.model_dir(str(root), repo))
    files = {"config.json": json.dumps(model_files.config(repo)), "model.safetensors.index.json": json.dumps(model_files.index(repo)),
             **{name: "weights" for name in model_files.shard_names()}}
    (base / "blobs").mkdir(parents=True)
    (base / "refs").mkdir()
    commit = "0123456789abcdef0123456789abcdef01234567"
    (base / "refs" / "main").write_text(commit)
    snap = base / "snapshots" / commit
    if snapshot:
        snap.mkdir(parents=True)
    for i, (name, content) in enumerate(files.items()):
        blob = base / "blobs" / f"{i:040x}"
        blob.write_text(content)
        blob.chmod(0o644)
        if snapshot:
            (snap / name).symlink_to(f"../../blobs/{blob.name}")
    return files["model.safetensors.index.json"]


@pytest.mark.parametrize("state", ["no folder", "blobs but no snapshot"])
def test_model_missing_is_reported(tmp_path, state):
    cluster = with_deploy(hf_cache=str(tmp_path))
    repo = cluster.deploy.model_id
    if state != "no folder":
        hf_cache(tmp_path, repo, snapshot=False)  # an interrupted first download
    # On a follower: copy rank 0's.
    [f] = model.judge_cache("thinkstationpgx-32", repo, listing_of(cluster), None, "thinkstationpgx-30")
    assert codes([f]) == [(Code.MODEL_NOT_COPIED, "thinkstationpgx-32", False)]
    assert f.text == ("[model-not-copied] thinkstationpgx-32: saw no snapshot of Qwen/Qwen3.8-Flash-Next-FP8 in the cache; "
                      "expected Qwen/Qwen3.8-Flash-Next-FP8 copied from thinkstationpgx-30\n  fix: copy Qwen/Qwen3.8-Flash-Next-FP8 "
                      "from thinkstationpgx-30 (rank 0) to thinkstationpgx-32: gb10check sync (rsync -a over the QSFP link, "
                      "without -L, after sudo chmod -R a+rX on thinkstationpgx-30); if thinkstationpgx-30 lacks it too, "
                      "download it there first")
    # On rank 0 itself (and on a one-node cluster): download it there; never "copy it to" rank 0.
    for head in ("thinkstationpgx-30", None):
        [f] = model.judge_cache("thinkstationpgx-30", repo, listing_of(cluster), None, head)
        assert codes([f]) == [(Code.MODEL_MISSING, "thinkstationpgx-30", False)]
        assert f.text.endswith("\n  fix: download Qwen/Qwen3.8-Flash-Next-FP8 into the Hugging Face cache on "
                               "thinkstationpgx-30, rank 0 (hf download Qwen/Qwen3.8-Flash-Next-FP8, with HF_HOME or HF_HUB_CACHE "
                               "naming deploy.hf_cache), then sudo chmod -R a+rX its hub folder; gb10check sync then copies it to "
                               "the other nodes")


def test_model_cache_complete_passes(tmp_path):
    cluster = with_deploy(hf_cache=str(tmp_path))
    index = hf_cache(tmp_path, cluster.deploy.model_id, snapshot=True)
    assert model.judge_cache("thinkstationpgx-32", cluster.deploy.model_id, listing_of(cluster), index) == []


FP8_CONFIG, FP8_INDEX = json.dumps(model_files.config(model_files.REPO_FP8)), json.dumps(model_files.index(model_files.REPO_FP8))


def sized(cluster, config: str = FP8_CONFIG, index: str = FP8_INDEX):
    """The check's own sizing (model.size) of the seed's FP8 checkpoint files (config.json and the safetensors index)."""
    return model.size(config, index, cluster)


def test_model_fits_with_the_field_reports_settings():
    fit, error = sized(CLUSTER)
    assert error is None and fit.ok
    assert model.judge_fit("thinkstationpgx-30", CLUSTER.deploy.model_id, fit) == []


def test_model_too_big_is_reported():
    # The seed's FP8 checkpoint fits at 262144 tokens; at 1048576 one sequence's KV cache (12 GiB per rank) overruns the budget.
    fit, error = sized(with_deploy(max_model_len=1048576, container_memory_limit=118))
    assert error is None
    [f] = model.judge_fit("thinkstationpgx-30", model_files.REPO_FP8, fit)
    assert codes([f]) == [(Code.MODEL_TOO_BIG, "thinkstationpgx-30", False)]
    assert re.fullmatch(r"\[model-too-big\] thinkstationpgx-30: saw need \d+\.\d GiB per rank \(weights 86\.4, KV 12\.0 for one "
                        r"sequence\); expected at most 95\.2 GiB \(gpu_memory_utilization x memory\)\n"
                        r"  fix: lower --max-model-len \(halve it: the seed went 262144 -> 131072 -> 65536\) or --max-num-seqs, "
                        r"or use a smaller checkpoint \(seed's troubleshooting table\)", f.text), f.text
    assert fit.need_gib > fit.budget_gib


def test_container_limit_low_is_reported():
    fit, _ = sized(with_deploy(container_memory_limit=80))
    [f] = model.judge_fit("thinkstationpgx-30", model_files.REPO_FP8, fit)
    assert codes([f]) == [(Code.CONTAINER_LIMIT_LOW, "thinkstationpgx-30", False)]
    assert re.fullmatch(r"\[container-limit-low\] thinkstationpgx-30: saw need \d+\.\d GiB per rank; expected under the container "
                        r"limit 80 GiB\n  fix: raise deploy.container_memory_limit above the need \(and below the machine's memory\), "
                        r"or lower max_model_len", f.text), f.text
    assert 80 < fit.need_gib < fit.budget_gib


@pytest.mark.parametrize("config, index, why", [
    (json.dumps({k: v for k, v in json.loads(FP8_CONFIG).items() if k != "num_attention_heads"}), FP8_INDEX,
     "config.json lacks 'num_attention_heads' (need num_hidden_layers, num_attention_heads, hidden_size or head_dim)"),
    (FP8_CONFIG, json.dumps({"weight_map": json.loads(FP8_INDEX)["weight_map"]}),
     "model.safetensors.index.json has no metadata.total_size"),
    (FP8_CONFIG[:100], FP8_INDEX, "Unterminated string starting at"),  # a config.json cut short
])
def test_model_config_is_reported(config, index, why):
    fit, error = sized(CLUSTER, config=config, index=index)
    assert fit is None
    [f] = model.judge_fit("thinkstationpgx-32", CLUSTER.deploy.model_id, fit, error)
    assert codes([f]) == [(Code.MODEL_CONFIG, "thinkstationpgx-32", False)]
    assert f.text.startswith(f"[model-config] thinkstationpgx-32: saw cannot size Qwen/Qwen3.8-Flash-Next-FP8: {why}")
    assert f.text.endswith("expected a config.json and safetensors index that describe the model\n  fix: check config.json and "
                           "model.safetensors.index.json of Qwen/Qwen3.8-Flash-Next-FP8 on thinkstationpgx-32 (a partial "
                           "download or a hand-edited file): gb10check sync copies rank 0's")


# ---- container runtime and image --------------------------------------------------------------


def test_docker_missing_is_reported(tmp_path):
    # The suite's own commands, run for real here by bash with no docker on PATH (as on a node without docker).
    server, compose_v = (subprocess.run(["/bin/bash", "-c", c], capture_output=True, text=True, env={"PATH": str(tmp_path)},
                                        timeout=30) for c in (container.DOCKER_SERVER, container.COMPOSE_VERSION))
    assert server.returncode == 127
    [f] = container.judge_runtime("thinkstationpgx-32", "lenovo", server.returncode, server.stdout + server.stderr,
                                  compose_v.stdout + compose_v.stderr)
    assert codes([f]) == [(Code.DOCKER_MISSING, "thinkstationpgx-32", False)]
    assert f.text == ("[docker-missing] thinkstationpgx-32: saw /bin/bash: line 1: docker: command not found; expected the docker "
                      "CLI and daemon\n  fix: install docker on thinkstationpgx-32 (the GB10 image ships it: sudo apt install "
                      "docker-ce, or docker.io)")
    # Healthy: the versions the simulated nodes run (Docker 28.2.2 with Compose 2.26.1; selftests/captures/README.md).
    assert container.judge_runtime("thinkstationpgx-32", "lenovo", 0, "28.2.2\n", "Docker Compose version 2.26.1\n") == []


@pytest.mark.parametrize("capture, machine, name, seen, want", [
    # The sim's real image (amd64) on a GB10 (aarch64): the deployment case.
    ("ours/docker/sim-docker-image-inspect-rank0.json", "aarch64\n", "gb10sim/vllm-cpu:local", "linux/amd64", "arm64"),
    # A real GB10 image (arm64) on an x86_64 node.
    ("docker/docker-image-inspect-rootfs-jethac.json", "x86_64\n", "ghcr.io/aeon-7/aeon-gemma-4-26b-a4b-dflash:v2", "linux/arm64",
     "amd64"),
])
def test_image_arch_is_reported(capture, machine, name, seen, want):
    image = parse("docker_image_inspect", read_capture(capture))
    [f] = container.judge_image("pgx", name, image, "", machine)
    assert codes([f]) == [(Code.IMAGE_ARCH, "pgx", False)]
    assert f.text.startswith(f"[image-arch] pgx: saw {name} is {seen}; expected {want} like the node ({machine.strip()})\n"
                             f"  fix: use an image built for {want} on pgx")
    # Healthy: the same image on a node of its own architecture.
    other = {"aarch64\n": "x86_64\n", "x86_64\n": "aarch64\n"}[machine]
    assert container.judge_image("pgx", name, image, "", other) == []


# ---- compose ----------------------------------------------------------------------------------


def test_compose_missing_is_reported():
    compose_path, env_path = gather.compose_files(CLUSTER)
    text = read_capture("ours/docker/sim-compose-config-rank0.txt")
    env = compose.env_file(CLUSTER, HEAD)
    for gone, (t, e) in ((compose_path, (None, env)), (env_path, (text, None))):  # `cat` failed: None
        [f] = compose_lint.judge_files("thinkstationpgx-30", compose_path, env_path, t, e)
        assert codes([f]) == [(Code.COMPOSE_MISSING, "thinkstationpgx-30", False)]
        assert f.text == (f"[compose-missing] thinkstationpgx-30: saw no {gone}; expected the compose file and .env\n"
                          f"  fix: render and push the stack (scripts/compose-render) so {gone} exists on thinkstationpgx-30")
    assert compose_lint.judge_files("thinkstationpgx-30", compose_path, env_path, text, env) == []


def sim_cluster():
    """The example cluster (the same nodes and addresses as the simulated pair) with the sim's deployment values that the
    lint reads (gb10check.sim.topology.cluster_yaml): what selftests/captures/docker/sim-compose-config-rank0.txt was
    rendered from by `gb10check sim up`."""
    return with_deploy(image="gb10sim/vllm-cpu:local", model_id="gb10sim/SmolLM2-135M-Instruct-tp2",
                       served_model_name="smollm2-135m", max_model_len=8192, max_num_seqs=4, tool_call_parser="hermes",
                       extra_args=["--enforce-eager"], map_infiniband=False, memlock_unlimited=False)


def lint_sim_capture(text: str):
    """The lint of rank 0 on the sim's real `docker compose config` output, its real `ip -j addr`, and its ports."""
    cluster = sim_cluster()
    node = cluster.node("thinkstationpgx-30")
    env = compose.parse_env(compose.env_file(cluster, node))
    ifaces = parse("ip_j_addr", read_capture("ours/ip_ethtool/sim-ip-j-addr-rank0.json"))
    ports = facts_for(node)[1]  # ACTIVE, RoCE v2 at GID index 3 (the sim's stand-in answers so)
    config = parse("compose_config", text)
    return compose_lint.judge(cluster, node, config, env, ifaces, ports, dry_run_here(config, env))


def of(findings, code):
    return [f for f in findings if f.code is code]


SETTING_AND_ARG = (Code.COMPOSE_SETTING, Code.COMPOSE_ARG)


def test_compose_no_vllm_is_reported():
    # A real `docker compose config` of three nginx services: nothing runs vllm.
    config = parse("compose_config", read_capture("docker/compose-config-include-3svc-default-null-idx41743795395.txt"))
    [f] = compose_lint.judge(CLUSTER, HEAD, config, our_env(HEAD), [], [], None)
    assert codes([f]) == [(Code.COMPOSE_NO_VLLM, "thinkstationpgx-30", False)]
    assert f.text == ("[compose-no-vllm] thinkstationpgx-30: saw no service running vllm in the compose file; expected a vllm "
                      "service\n  fix: the compose file on thinkstationpgx-30 must run `vllm serve` (render it with "
                      "scripts/compose-render)")
    # Our rendered stack whose command never calls vllm (the dry run's stub is never reached).
    text = compose.render(CLUSTER).replace('exec vllm serve "${MODEL_ID}"', 'exec true "${MODEL_ID}"')
    [f] = lint(text, our_env, "thinkstationpgx-30")
    assert codes([f]) == [(Code.COMPOSE_NO_VLLM, "thinkstationpgx-30:vllm", False)]
    assert f.text.startswith("[compose-no-vllm] thinkstationpgx-30:vllm: saw the command never runs `vllm` (dry run with a stub "
                             "vllm); expected vllm serve ...\n  fix: the compose file on thinkstationpgx-30 must run `vllm serve`")
    assert lint(compose.render(CLUSTER), our_env, "thinkstationpgx-30") == []


@pytest.mark.parametrize("old, new, seen, expected, setting", [
    ("    ipc: host\n", "", "no ipc", "ipc: host", "ipc: host"),
    ("cap_add:\n    - IPC_LOCK\n", "cap_add:\n", "IPC_LOCK not in cap_add", "cap_add: [IPC_LOCK]", "cap_add: [IPC_LOCK]"),
    ("    - /dev/infiniband:/dev/infiniband\n", "    - /dev/null:/dev/null\n", "no /dev/infiniband in devices",
     "/dev/infiniband:/dev/infiniband", "devices: [/dev/infiniband:/dev/infiniband]"),
    ("memlock: -1", "memlock: 65536", "ulimits.memlock 65536", "memlock: -1", "ulimits: {memlock: -1}"),
])
def test_compose_setting_is_reported(old, new, seen, expected, setting):
    text = compose.render(CLUSTER)
    assert old in text
    [f] = lint(text.replace(old, new, 1), our_env, "thinkstationpgx-32")
    assert codes([f]) == [(Code.COMPOSE_SETTING, "thinkstationpgx-32:vllm", False)]
    assert f.text == (f"[compose-setting] thinkstationpgx-32:vllm: saw {seen}; expected {expected}\n"
                      f"  fix: set {setting} in the compose service on thinkstationpgx-32 (the field report's design; see "
                      "cluster.example.yaml)")


def test_compose_setting_is_reported_on_the_sims_compose_config():
    text = read_capture("ours/docker/sim-compose-config-rank0.txt")
    # Healthy as `gb10check sim up` rendered it: no setting or argument finding (see the report about its memory limit).
    assert of(lint_sim_capture(text), Code.COMPOSE_SETTING) == of(lint_sim_capture(text), Code.COMPOSE_ARG) == []
    broken = text.replace("network_mode: host", "network_mode: bridge")
    found = [f for f in lint_sim_capture(broken) if f.code in SETTING_AND_ARG]
    assert codes(found) == [(Code.COMPOSE_SETTING, "thinkstationpgx-30:vllm", False)]
    assert found[0].text == ("[compose-setting] thinkstationpgx-30:vllm: saw network_mode: 'bridge'; expected network_mode: host\n"
                             "  fix: set network_mode: host in the compose service on thinkstationpgx-30 (the field report's "
                             "design; see cluster.example.yaml)")


@pytest.mark.parametrize("old, new, seen, expected, arg, value", [
    ("--max-model-len 262144", "--max-model-len 131072", "--max-model-len 131072", "--max-model-len 262144", "--max-model-len",
     "262144"),
    ("--served-model-name qwen3.8-flash-next ", "", "no --served-model-name", "--served-model-name qwen3.8-flash-next",
     "--served-model-name", "qwen3.8-flash-next"),
    ('--master-addr "${MASTER_ADDR}"', "--master-addr 192.168.101.10", "--master-addr 192.168.101.10",
     "--master-addr 169.254.94.252", "--master-addr", "169.254.94.252"),
])
def test_compose_arg_is_reported(old, new, seen, expected, arg, value):
    text = compose.render(CLUSTER)
    assert old in text
    [f] = lint(text.replace(old, new), our_env, "thinkstationpgx-32")
    assert codes([f]) == [(Code.COMPOSE_ARG, "thinkstationpgx-32:vllm", False)]
    assert f.text == (f"[compose-arg] thinkstationpgx-32:vllm: saw {seen}; expected {expected}\n"
                      f"  fix: pass {arg} {value} on thinkstationpgx-32")


def test_compose_arg_is_reported_on_the_sims_compose_config():
    text = read_capture("ours/docker/sim-compose-config-rank0.txt")
    broken = text.replace("--distributed-timeout-seconds 3600", "--distributed-timeout-seconds 600")
    found = [f for f in lint_sim_capture(broken) if f.code in SETTING_AND_ARG]
    assert codes(found) == [(Code.COMPOSE_ARG, "thinkstationpgx-30:vllm", False)]
    assert found[0].text == ("[compose-arg] thinkstationpgx-30:vllm: saw --distributed-timeout-seconds 600; expected >= 3600 (the "
                             "load skew between nodes: seed 341 s vs 831 s)\n"
                             "  fix: pass --distributed-timeout-seconds 3600 on thinkstationpgx-30")


# ---- nccl-tests: wrong values ----------------------------------------------------------------

def test_wrong_values_fail_whatever_the_bandwidth():
    """Our real H200 run (all_reduce_perf 8 B..256 MiB over P2P) with its last row's out-of-place #wrong set to 12 and the
    summary's out-of-bounds count to 12 FAILED, as nccl-tests prints a run whose data arrived corrupted."""
    real = read_capture("ours/nccl_tests/h200x2-all_reduce_perf-8-256M-f4-g2-p2p.txt")
    last = [l for l in real.splitlines() if re.match(r"\s+\d+\s+\d+\s+float\s+sum", l)][-1]
    wrong = list(re.finditer(r"\S+", last))[8]  # the out-of-place #wrong cell, "0": right-aligned "12" in its place
    corrupted = last[:wrong.end() - 2] + "12" + last[wrong.end():]
    text = real.replace(last, corrupted).replace("# Out of bounds values : 0 OK", "# Out of bounds values : 12 FAILED")
    healthy, broken = parse("nccl_tests", real), parse("nccl_tests", text)
    assert judge_nccl(healthy, Expect(min_nccl_busbw_gbps=1), "h200") == []
    assert broken.errors_found and broken.wrong_sizes == [134217728] and broken.out_of_bounds_ok is False
    assert broken.busbw_gbps == healthy.busbw_gbps  # the bandwidth alone would pass
    [f] = judge_nccl(broken, Expect(min_nccl_busbw_gbps=1), "h200")
    assert f.code == Code.NCCL_WRONG_VALUES and not f.warning
    assert f.text.startswith("[nccl-wrong-values] h200: saw wrong values in 1 row(s) of the result table (#wrong > 0 at "
                             "134217728 bytes); expected 0 wrong values at every size\n  fix: data arrived corrupted")
    only_summary = parse("nccl_tests", real.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED"))
    assert [f.seen for f in judge_nccl(only_summary, Expect(min_nccl_busbw_gbps=1), "h200")] == ["'# Out of bounds values' FAILED"]


# ---- every failure code is proven -------------------------------------------------------------

# Judge tests: the pure tests above and their kind. test_ssh_failures.py proves each way a node cannot be reached end to
# end (a real sshd); test_not_checked.py and test_remote.py a connection that breaks.
JUDGE_TESTS = ["test_judges*.py", "test_compose_lint.py", "test_not_checked.py", "test_ssh_failures.py", "test_remote.py"]


def test_every_failure_code_is_proven():
    from gb10check.sim.scenarios import SCENARIOS

    by_scenario = {p.split(":", 1)[1] for s in SCENARIOS.values() for p in s.proves}
    here = Path(__file__).resolve().parent
    text = "".join(p.read_text() for pattern in JUDGE_TESTS for p in sorted(here.glob(pattern)))

    def by_judge_test(c: Code) -> bool:
        # Code.NAME, or the finding's printed tag asserted in its text ("[driver-mismatch] edgexpert: saw ...").
        return bool(re.search(rf"\bCode\.{c.name}\b", text)) or f"[{c.value}] " in text

    unproven = [c.value for c in Code if c not in NOT_CHECKED and c.value not in by_scenario and not by_judge_test(c)]
    assert unproven == [], f"failure codes proven neither by a scenario's `proves` nor by a judge test: {unproven}"
