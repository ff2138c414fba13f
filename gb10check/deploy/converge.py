"""The helpers that change a node say what they will change before changing it: one way to show it."""

import base64
import difflib
import shlex

from rich.console import Console
from rich.markup import escape

from ..errors import line
from ..remote import RemoteNode


def console() -> Console:
    """The helpers' console: standard error, a message per line whatever the width (a diff line is never folded and keeps
    its + or -, a log stays greppable), colour only on a terminal."""
    return Console(stderr=True, soft_wrap=True)


def error(console: Console, exc: Exception, what: str = "error") -> None:
    """An error met on a node, in one line with its fix."""
    console.print(f"[red]{what}[/] {escape(line(exc))}")


def show_change(console: Console, where: str, have: str | None, want: str, check_only: bool, secret: bool = False) -> bool:
    """Print `unchanged WHERE`, or `changing`/`would change WHERE` and a unified diff (a secret's content is never shown).

    Returns whether it differs. have None: the file does not exist yet."""
    if have == want:
        console.print(f"[green]unchanged[/] {where}")
        return False
    console.print(f"[yellow]{'would change' if check_only else 'changing'}[/] {where}" + (" (new file)" if not have else "")
                  + (" (a private key: content not shown)" if secret else ""))
    if not secret:
        diff = difflib.unified_diff((have or "").splitlines(keepends=True), want.splitlines(keepends=True),
                                    f"{where} (now)", f"{where} (wanted)")
        console.print("".join(diff), markup=False, highlight=False, soft_wrap=True)
    return True


def install_file(remote: RemoteNode, path: str, text: str, mode: str = "644") -> None:
    """Write `text` to `path` on the node as root with `mode` (through a temporary file the SSH user writes)."""
    blob = base64.b64encode(text.encode()).decode()
    tmp = shlex.quote(f"/tmp/gb10check-{remote.name}-{path.rsplit('/', 1)[-1]}")
    remote.output(f"printf %s {blob} | base64 -d > {tmp}")
    remote.output(f"install -m {mode} -o root -g root {tmp} {shlex.quote(path)} && rm -f {tmp}", sudo=True)


def exit_code(errors: int, check_only: bool, changed: bool) -> int:
    """A helper script's exit status: 2 an error (named above), 1 --check found something to change, 0 nothing left."""
    if errors:
        return 2
    return 1 if check_only and changed else 0
