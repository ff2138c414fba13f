"""Fabric only: after deploy, every established TCP connection between two cluster nodes (`ss -tanp` on each node; a
container on the host network shows there too) runs between the links' addresses, never the management network's.
Serving that needs the management network dies when that network drops (Wi-Fi, a switch reboot), although the links are
healthy: Gloo, NCCL's bootstrap, vLLM's message queue and Ray each bind to the default route unless told otherwise.

SSH (port 22 on either side) and the served API (deploy.api_port: a client on another node asks rank 0 as any client
does) are management traffic by rule and belong on the management network. A connection to a host that is not a cluster
node (the runner, a registry) is not judged. Pure: sockets in (facts/ss.py), findings out.
"""

from ..cluster import Link
from ..facts.ip import Interface
from ..facts.ss import Socket
from ..remedies import Code
from ..verdict import Finding

SSH_PORT = 22


def addresses_of(node: str, ifaces: list[Interface], links: list[Link]) -> tuple[dict[str, str], dict[str, str]]:
    """(management, links): a node's addresses -> its name. Links: the cluster file's link addresses and every address on
    a link's netdev (its IPv6 link-local too); management: every other address but loopback's."""
    on_links = {link.netdev for link in links}
    fabric = {link.ip: node for link in links} | {a.address: node for i in ifaces if i.name in on_links for a in i.addresses}
    mgmt = {a.address: node for i in ifaces if i.name not in on_links and i.name != "lo" and i.link_type != "loopback"
            for a in i.addresses if a.address not in fabric and a.scope != "host"}
    return mgmt, fabric


def between_nodes(sockets: list[Socket], node_of: dict[str, str]) -> list[Socket]:
    """Established connections whose peer is another cluster node's address (node_of: every node's address -> name)."""
    return [s for s in sockets if s.state == "ESTAB" and s.peer in node_of and node_of.get(s.local) != node_of[s.peer]]


def judge_fabric(node: str, sockets: list[Socket], mgmt: dict[str, str], links: dict[str, str], link_netdevs: list[str],
                 api_port: int) -> list[Finding]:
    """Each connection from `node` to a peer's management address (mgmt: address -> node) fails, naming the connection,
    its process and the variables that bind it; connections over the links (links: address -> node) pass. No connection
    between nodes at all: not checked (the stack is not deployed across nodes, or ss could not see its sockets)."""
    peers = between_nodes(sockets, {**mgmt, **links})
    if not peers:
        return [Finding(Code.FABRIC_UNSEEN, node, "no established TCP connection to the other node's addresses",
                        "the deployment's connections between ranks (Gloo, NCCL bootstrap, vLLM's message queue, Ray)")]
    wrong = [s for s in peers if s.peer in mgmt and not {SSH_PORT, api_port} & {s.local_port, s.peer_port}]
    dev = ",".join(link_netdevs) or "<the link netdevs>"
    return [Finding(Code.TRAFFIC_ON_MGMT, node,
                    f"{s} ({mgmt[s.peer]}'s management address), process {s.process or 'unknown (ss ran without root)'}",
                    "connections between nodes on the links' addresses", netdevs=dev) for s in wrong]
