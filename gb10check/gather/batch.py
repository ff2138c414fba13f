"""One shell script per node that starts every command at once, each bounded, and its output read back by command."""

import base64
import shlex
from dataclasses import dataclass

from ..remedies import Code
from .commands import DOCKER_PS, DOCKER_STATS, GPU_PROCESSES, MEMINFO

@dataclass(frozen=True)
class Output:
    command: str
    rc: int
    stdout: str
    stderr: str


TIMED_OUT = 124  # timeout(1)'s exit status


# Looked at before the run's own containers (the GPU probe, Ray's version, the canaries) start: the stale-container
# check took this run's probe, with the deployment's image, for a serving container left behind; the memory checks
# would count what a canary's torch holds as used; the GPU-process check would take a canary for a process left behind.
LOOK_FIRST = (DOCKER_PS, DOCKER_STATS, MEMINFO, GPU_PROCESSES)


def starts_container(command: str) -> bool:
    return "docker run " in command


def batch_script(commands: list[str], timeout_s: float, longer: dict[str, float] | None = None,
                 first: tuple[str, ...] = ()) -> str:
    """One shell script that starts every command at once, each bounded (by `timeout_s`, or its own in `longer`), and prints
    `index rc base64(stdout) base64(stderr)`. The commands that start a container wait until those in `first` are done."""
    longer = longer or {}
    t = {c: max(1, round(longer.get(c, timeout_s))) for c in commands}
    gate = [i for i, c in enumerate(commands) if c in first]
    held = [i for i, c in enumerate(commands) if gate and c not in first and starts_container(c)]

    def start(i: int) -> str:
        c = commands[i]
        return f'( timeout -k 2 {t[c]} sh -c {shlex.quote(c)} >"$d/{i}.o" 2>"$d/{i}.e" </dev/null; echo $? >"$d/{i}.rc" ) &'

    lines = ['d=$(mktemp -d) || exit 1', 'first=""']
    for i in range(len(commands)):
        if i not in held:
            lines += [start(i)] + (['first="$first $!"'] if i in gate else [])
    if held:
        lines += ['wait $first'] + [start(i) for i in held]
    lines += ["wait", f'for i in $(seq 0 {len(commands) - 1}); do printf \'%s %s %s %s\\n\' "$i" "$(cat "$d/$i.rc")" '
                      '"$(base64 -w0 <"$d/$i.o")" "$(base64 -w0 <"$d/$i.e")"; done', 'rm -rf "$d"']
    return "\n".join(lines)


def read_batch(commands: list[str], text: str) -> dict[str, Output]:
    """The outputs of `batch_script`, by command (a line that does not decode is left out: that command runs live)."""
    found = {}
    for line in text.splitlines():
        parts = line.split(" ")
        if len(parts) != 4 or not parts[0].isdigit() or int(parts[0]) >= len(commands):
            continue
        try:
            rc = int(parts[1])
            out, err = (base64.b64decode(p).decode(errors="replace") for p in parts[2:])
        except ValueError:
            continue
        found[commands[int(parts[0])]] = Output(commands[int(parts[0])], rc, out, err)
    return found


class Unreadable(Exception):
    """A fact or a program's output that could not be read: why, the code, and the code's remedy parameters."""

    def __init__(self, why: str, code: Code = Code.COMMAND_FAILED, expected: str = "", **params):
        super().__init__(why)
        self.why, self.code, self.expected, self.params = why, code, expected, params
