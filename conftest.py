# The suite's fixtures (cluster, node, link_pair, node_pair, head, api) live in gb10check.plugin.
pytest_plugins = ["gb10check.plugin"]
