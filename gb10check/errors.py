"""The helpers' errors, one line each: what went wrong, where, and the fix. A traceback only with --debug.

`UserError` is a mistake or a state the user fixes (a cluster file, a node the runner cannot reach): its message is
the whole story, a line per problem. `line(exc)` words any error the helpers meet that way: a node that cannot be
reached or a command that failed on it carries the fix from gb10check/remedies.py, filled in for that node; an error
of gb10check itself says so and how to see its traceback. `unreachable(nodes)` reaches every node at once before a
helper changes anything, so a step never stops half-way because the last node was off.
"""

from concurrent.futures import ThreadPoolExecutor

from .remedies import Code, fix


class UserError(Exception):
    """A problem the user fixes; one line per problem, each with its fix."""


def line(exc: BaseException) -> str:
    """The error as one line with its fix."""
    from .cluster import ClusterError
    from .remote import CommandTimeout, NodeUnreachable, RemoteError

    if isinstance(exc, UserError):
        return str(exc)
    if isinstance(exc, ClusterError):
        return f"invalid cluster file: {exc}"
    if isinstance(exc, NodeUnreachable):  # each way a connection fails carries its own fix (remote.py)
        return f"{' '.join(str(exc).split())}; fix: {exc.fix}"
    if isinstance(exc, RemoteError):
        text = " ".join(str(exc).split())
        if exc.node is None:
            return text
        code = Code.COMMAND_TIMEOUT if isinstance(exc, CommandTimeout) else Code.COMMAND_FAILED
        return f"{text}; fix: {fix(code, node=exc.node.name, command=exc.command or '')}"
    return (f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())} (a bug of gb10check: run the command again "
            "with --debug for the traceback and report it)")


def unreachable(nodes) -> list[str]:
    """A line (with the fix) for each node that cannot be reached now; every node tried at once."""
    from .remote import RemoteError

    def reach(node) -> str | None:
        try:
            node.host  # noqa: B018 - opens the connection (kept for the step's commands)
        except RemoteError as exc:
            return line(exc)
        return None

    nodes = list(nodes)
    with ThreadPoolExecutor(max_workers=len(nodes) or 1) as pool:
        return [said for said in pool.map(reach, nodes) if said]
