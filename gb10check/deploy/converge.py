"""The helpers that change a node say what they will change before changing it: one way to show it."""

import difflib

from rich.console import Console


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
        console.print("".join(diff), markup=False, highlight=False)
    return True
