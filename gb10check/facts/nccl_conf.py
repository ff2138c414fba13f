"""NCCL's configuration files, as NCCL itself reads them, and the lines of an NCCL_DEBUG=INFO log that name its net plugin.

NCCL's rules (NVIDIA/nccl src/misc/param.cc, setEnvFile and initEnvFunc; src/os/linux.cc, ncclOsSetEnv; the same since
2.9 in src/include/param.h):
- the files: $NCCL_CONF_FILE when set (2.22+), else $HOME/.nccl.conf; then /etc/nccl.conf;
- each line is KEY=VALUE, split at the first `=`, nothing trimmed (`NCCL_X = 1` sets the variable `NCCL_X ` to ` 1`);
  a line starting with `#` is a comment (a `#` anywhere else is part of the value); a line without `=` is skipped;
  a trailing CR is dropped;
- every line is applied with setenv(key, value, 0): a variable already set is never replaced. So the process's
  environment wins over both files, the first file over /etc/nccl.conf, and within one file its first line of a key.

The log lines (`NCCL INFO ...`) that say which network NCCL took, across versions:
`NET/Plugin : No plugin found (libnccl-net.so)` (before 2.19), `NET/Plugin: Could not find: libnccl-net.so` (2.19+):
no external plugin; `NET/Plugin: Loaded net plugin NAME (vN)`, `Successfully loaded external plugin LIB`,
`Successfully loaded external network plugin LIB` (2.28+), `Plugin Path : PATH`: one loaded; `Using network NAME`,
`Initialized NET plugin NAME` and `Assigned NET plugin NAME to comm`: the network the communicator uses (NCCL's own are
"IB" and "Socket"; a plugin's are its own names, IBext for NVIDIA's nccl-rdma-sharp-plugins).
"""

import re
from dataclasses import dataclass, field

from ._text import ParseError, parser

INTERNAL_NETWORKS = ("IB", "Socket")


def parse_conf(text: str) -> dict[str, str]:
    """KEY -> VALUE of one NCCL configuration file, as NCCL applies it (the first line of a key wins)."""
    out: dict[str, str] = {}
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        if key:
            out.setdefault(key, value)
    return out


# The probe (gather.commands.NCCL_CONF_IMAGE / NCCL_CONF_HOST) prints sections between these marks.
MARK = re.compile(r"^-- gb10check: (?P<what>home|file|absent|unreadable|env|libraries|end|done)(?: (?P<arg>.*?))? --$")


@dataclass
class NcclConfProbe:
    """What the probe saw in one place (the image, or the host)."""

    home: str  # the HOME whose .nccl.conf NCCL reads
    files: dict[str, dict[str, str] | None] = field(default_factory=dict)  # path -> its keys; None: absent. In NCCL's order
    texts: dict[str, str] = field(default_factory=dict)  # path -> its text as printed
    env: dict[str, str] | None = None  # NCCL_* and LD_LIBRARY_PATH of the place's own environment (the image's); None: not read
    libraries: list[tuple[str, str, str]] | None = None  # (how found: ld_library_path|cache|default, name, path); None: not read


PROBE = "nccl_conf_probe"


def _refuse(expected: str, text: str):
    return ParseError(PROBE, expected, text)


def parse_probe(text: str) -> NcclConfProbe:
    """The probe's output, read exactly as printed (a configuration file's spaces are part of its values: no clean-up)."""
    lines = text.split("\n")
    marks = [(i, MARK.match(l)) for i, l in enumerate(lines) if MARK.match(l)]
    if not marks or marks[0][1]["what"] != "home":
        raise _refuse("the NCCL configuration probe's output (a '-- gb10check: home ... --' line first)", text)
    if marks[-1][1]["what"] != "done":
        raise _refuse("the probe's output to its '-- gb10check: done --' line (it was cut)", text)
    probe = NcclConfProbe(home=marks[0][1]["arg"] or "")
    open_at, what, arg = None, None, None
    for i, m in marks[1:]:
        kind = m["what"]
        if kind == "end":
            if open_at is None:
                raise _refuse(f"no end mark outside a section (line {i + 1})", text)
            body = "\n".join(lines[open_at + 1:i])
            if what == "file":
                probe.texts[arg] = body
                probe.files[arg] = parse_conf(body)
            elif what == "env":
                probe.env = dict(l.split("=", 1) for l in body.split("\n") if "=" in l)
            else:
                probe.libraries = []
                for l in body.split("\n"):
                    if l.strip():
                        parts = l.split(" ", 2)
                        if len(parts) != 3 or parts[0] not in ("ld_library_path", "cache", "default"):
                            raise _refuse(f"library lines 'SOURCE NAME PATH' (line {i + 1}: {l!r})", text)
                        probe.libraries.append((parts[0], parts[1], parts[2]))
            open_at = None
        elif open_at is not None:  # a section's end went missing (or a file holds our marks): not read as its text
            raise _refuse(f"an end mark for the {what} section opened on line {open_at + 1} before line {i + 1}", text)
        elif kind in ("file", "env", "libraries"):
            open_at, what, arg = i, kind, m["arg"]
        elif kind == "absent":
            probe.files[m["arg"]] = None
        elif kind == "unreadable":
            raise _refuse(f"{m['arg']} readable (it exists but could not be read)", text)
    if open_at is not None:
        raise _refuse(f"an end mark for the {what} section opened on line {open_at + 1}", text)
    if (probe.env is None) != (probe.libraries is None):  # the image's probe prints both, the host's neither
        raise _refuse("the env and libraries sections together (one is missing: a cut output)", text)
    return probe


@dataclass
class NetPluginLog:
    """What an NCCL_DEBUG=INFO log says of the net plugin."""

    external: str | None = None  # the external plugin loaded (its name or library); None: none loaded
    path: str | None = None  # its file (`Plugin Path :`)
    not_found: list[str] = field(default_factory=list)  # libraries NCCL looked for and did not find
    networks: list[str] = field(default_factory=list)  # `Using network X` / `Assigned NET plugin X`: each once, in order

    @property
    def internal(self) -> bool | None:
        """Whether the communicators ran on NCCL's own transports (IB, Socket); None: the log does not say."""
        if self.networks:
            return all(n in INTERNAL_NETWORKS for n in self.networks)
        if self.external:
            return False
        return True if self.not_found else None


NCCL_INFO = re.compile(r"\bNCCL INFO\s+(?P<msg>.*?)\s*$")
LOADED = re.compile(r"^NET/Plugin\s*:\s*Loaded net plugin\s+(?P<name>.+?)\s*(?:\(v\d+\))?$"
                    r"|^Successfully loaded external (?:network )?plugin\s+(?P<lib>\S+)")
PATH = re.compile(r"^Plugin Path\s*:\s*(?P<path>\S+)")
NOT_FOUND = re.compile(r"^NET/Plugin\s*:\s*(?:No plugin found \((?P<old>[^)]+)\)|Could not find:\s*(?P<new>.+?)(?:\.\s+\S.*|\.)?$)")
NETWORK = re.compile(r"^(?:Using network|Assigned NET plugin|Initialized NET plugin)\s+(?P<name>.+?)(?:\s+to comm)?$")


@parser
def parse_net_plugin(text: str) -> NetPluginLog:
    """The net plugin lines of an NCCL_DEBUG=INFO log; ParseError when there are no NCCL INFO lines at all."""
    log = NetPluginLog()
    saw_info = False
    for line in text.splitlines():
        m = NCCL_INFO.search(line)
        if not m:
            continue
        saw_info = True
        msg = m["msg"]
        if loaded := LOADED.match(msg):
            log.external = log.external or loaded["name"] or loaded["lib"]
        elif path := PATH.match(msg):
            log.path = log.path or path["path"]
        elif missing := NOT_FOUND.match(msg):
            for name in (missing["old"] or missing["new"]).split():
                if name not in log.not_found:
                    log.not_found.append(name)
        elif network := NETWORK.match(msg):
            if network["name"] not in log.networks:
                log.networks.append(network["name"])
    if not saw_info:
        raise ParseError("nccl_net_plugin", "an NCCL_DEBUG=INFO log ('NCCL INFO' lines)", text)
    return log
