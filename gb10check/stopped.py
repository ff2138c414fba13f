"""Which rank stopped, read live: two looks at every rank through the fact registry (gather.fleet.look: the rank_state
and ip_addr facts), `between` them whatever the caller does (the watch's one request) or a short wait, judged by
gb10check/checks/ranks.py. The soak takes its looks when it names a stall; `gb10check watch` on every tick.
"""

import time

from .checks.ranks import RankLook
from .cluster import Cluster
from .gather import Unreadable
from .gather.fleet import look
from .remote import RemoteError

GAP_S = 3.0  # between the two looks when nothing else runs between them: a working rank spends CPU time in it
FACTS = ("rank_state", "ip_addr")


def _state(got, name: str):
    if isinstance(got, RemoteError):
        return None, f"not reached: {got}"
    value = got[name]
    return (None, value.why) if isinstance(value, Unreadable) else (value, None)


def looks(cluster: Cluster, nodes: dict, between=None, gap_s: float = GAP_S, also: tuple[str, ...] = (),
          first_seen: dict | None = None) -> list[RankLook]:
    """Every rank looked at twice, `between()` run (or gap_s waited) between the looks; the second look reads the QSFP
    links too. `nodes`: name -> RemoteNode (the caller's connections); `also`: more facts read in the first look's batch,
    left in `first_seen` (node -> fact -> value or Unreadable, or the node's RemoteError)."""
    first = look(cluster, nodes, ("rank_state", *also))
    if first_seen is not None:
        first_seen.update(first)
    if between is None:
        time.sleep(gap_s)
    else:
        between()
    second = look(cluster, nodes, FACTS)
    out = []
    for spec in cluster.by_rank():
        a, _ = _state(first.get(spec.name), "rank_state")
        b, why = _state(second.get(spec.name), "rank_state")
        addrs, _ = _state(second.get(spec.name), "ip_addr")
        by_name = {i.name: i for i in addrs or []}
        links = {l.netdev: by_name.get(l.netdev) for l in spec.links} if addrs is not None else {}
        out.append(RankLook(spec.name, spec.rank, a, b, links, why))
    return out
