# The suite's fixtures (cluster, node, path, link_pair, head, api ...), for these tests only: gb10check/fixtures.py.
from gb10check.fixtures import api, cluster, cluster_file, follower, head, link_pair, measurements, node, node_link, node_pair, path, ray_cluster, required_port, tables, versions  # noqa: F401
