"""The NCCL configuration each rank really gets: every NCCL_* key of NCCL's configuration files in the deployment image
and on the host (and of the image's ENV) beside the rank's compose environment, the net plugin NCCL loads in the image,
and the variables the cluster's cabling needs (gb10check/checks/nccl_config.py has the rules and NCCL's precedence)."""

import pytest

from gb10check.checks import compose, nccl_config
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


@reads("vllm_service", "nccl_conf_image", "nccl_conf_host")
def test_nccl_config(node, cluster, measurements):
    env = compose.service_environment(read(node, "vllm_service")[1])
    image, host = read(node, "nccl_conf_image"), read(node, "nccl_conf_host")
    plugin, why = nccl_config.net_plugin(image, env)
    measurements("NCCL net plugin", node.name, plugin or "NCCL's own (IB, Socket)", why)
    # The design (compose.py) runs NCCL's own IB transport over RoCE wherever the cluster file names RDMA devices.
    wants_internal_ib = any(link.rdma_device for n in cluster.nodes for link in n.links)
    report(nccl_config.judge_files(node.name, f"image {cluster.deploy.image}", image, env)
           + nccl_config.judge_files(node.name, "host", host, env)
           + nccl_config.judge_net_plugin(node.name, cluster.deploy.image, image, env, wants_internal_ib))


@reads("vllm_service")
def test_nccl_topology_env(node, cluster):
    """The NCCL variables the cluster's cabling needs, in the node's compose environment (checks/nccl_config.py: a ring's
    subnet-aware routing and NCCL's own IB transport; a ring of four's patched NCCL; a pair's or switch's none of them)."""
    name, svc = read(node, "vllm_service")
    pin = cluster.deploy.nccl
    report(nccl_config.judge_topology_env(f"{node.name}:{name}", cluster.cabling, len(cluster.nodes),
                                          compose.service_environment(svc), pin.build_id if pin else None))
