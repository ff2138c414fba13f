"""docker inspect (container, image, State.Health), `docker compose ps`, `docker compose config`."""

import json
import re
from dataclasses import dataclass, field

import yaml

from ._text import ParseError, is_prompt, parser


def _one(kind: str, text: str) -> dict:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(kind, f"JSON from docker inspect ({exc.msg})", text) from None
    if isinstance(data, list):
        if not data:
            raise ParseError(kind, "a non-empty docker inspect array", text)
        data = data[0]
    if not isinstance(data, dict):
        raise ParseError(kind, "a JSON object", text)
    return data


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _strs(value) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


@dataclass
class Container:
    name: str
    image: str | None
    status: str  # running | exited | created ...
    running: bool
    oom_killed: bool
    exit_code: int | None
    started_at: str | None
    health: str | None
    memory_limit_gib: float | None  # None: no limit
    network_mode: str | None
    ipc_mode: str | None
    restart_policy: str | None
    command: list[str] = field(default_factory=list)


@parser
def parse_container(text: str) -> Container:
    d = _one("docker_inspect", text)
    state, host, config = d.get("State"), _dict(d.get("HostConfig")), _dict(d.get("Config"))
    if not isinstance(state, dict):
        raise ParseError("docker_inspect", "a container object with 'State' (docker inspect CONTAINER)", text)
    mem = host.get("Memory") if isinstance(host.get("Memory"), (int, float)) else 0
    return Container(
        name=str(d.get("Name", "")).lstrip("/"),
        image=config.get("Image"),
        status=state.get("Status", "unknown"),
        running=bool(state.get("Running")),
        oom_killed=bool(state.get("OOMKilled")),
        exit_code=state.get("ExitCode"),
        started_at=state.get("StartedAt"),
        health=_dict(state.get("Health")).get("Status"),
        memory_limit_gib=round(mem / 2**30, 3) if mem else None,
        network_mode=host.get("NetworkMode"),
        ipc_mode=host.get("IpcMode"),
        restart_policy=_dict(host.get("RestartPolicy")).get("Name"),
        command=[*_strs(config.get("Entrypoint")), *_strs(config.get("Cmd"))],
    )


@dataclass
class Health:
    status: str
    failing_streak: int
    last_exit_code: int | None


@parser
def parse_health(text: str) -> Health:
    d = _one("docker_health", text)
    d = _dict(_dict(d.get("State")).get("Health")) if "State" in d else d
    if not isinstance(d.get("Status"), str):
        raise ParseError("docker_health", "a State.Health object with 'Status'", text)
    log = [e for e in d.get("Log") or [] if isinstance(e, dict)] if isinstance(d.get("Log"), list) else []
    streak = d.get("FailingStreak")
    return Health(d["Status"], streak if isinstance(streak, int) else 0, log[-1].get("ExitCode") if log else None)


@dataclass
class Image:
    id: str
    tags: list[str]
    architecture: str | None
    os: str | None
    layers: list[str]
    size_gib: float | None


@parser
def parse_image(text: str) -> Image:
    d = _one("docker_image_inspect", text)
    rootfs = d.get("RootFS")
    if not isinstance(rootfs, dict):
        raise ParseError("docker_image_inspect", "an image object with 'RootFS' (docker image inspect IMAGE)", text)
    size = d.get("Size")
    return Image(str(d.get("Id", "")), _strs(d.get("RepoTags")), d.get("Architecture"), d.get("Os"),
                 _strs(rootfs.get("Layers")), round(size / 2**30, 3) if isinstance(size, int) else None)


@dataclass
class ComposeService:
    name: str
    image: str
    service: str
    status: str
    state: str  # running | exited | restarting | paused | created
    health: str | None
    ports: str


@parser
def parse_compose_ps(text: str) -> list[ComposeService]:
    lines = [line for line in text.splitlines() if line.strip() and not is_prompt(line)]
    if not lines or not lines[0].startswith("NAME"):
        raise ParseError("compose_ps", "a table whose header starts with NAME (output of `docker compose ps`)", text)
    header = lines[0]
    cols = [(m.group(), m.start()) for m in re.finditer(r"\S+", header)]
    services = []
    for line in lines[1:]:
        cells = {}
        for i, (name, start) in enumerate(cols):
            end = cols[i + 1][1] if i + 1 < len(cols) else None
            cells[name] = line[start:end].strip()
        status = cells.get("STATUS", "")
        state = "running" if status.startswith("Up") else status.split()[0].lower() if status else "unknown"
        health = m[1] if (m := re.search(r"\((healthy|unhealthy|health: starting)\)", status)) else None
        services.append(ComposeService(cells.get("NAME", ""), cells.get("IMAGE", ""), cells.get("SERVICE", ""), status,
                                       state, health, cells.get("PORTS", "")))
    return services


@parser
def parse_compose_config(text: str) -> dict:
    """`docker compose config` (or a compose file) as the YAML mapping; services must be present."""
    body = "\n".join(line for line in text.splitlines() if not is_prompt(line))
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise ParseError("compose_config", f"compose YAML ({str(exc).splitlines()[0]})", text) from None
    if not isinstance(data, dict) or not isinstance(data.get("services"), dict):
        raise ParseError("compose_config", "a YAML mapping with 'services'", text)
    return data


# ---- versions and the running containers, in formats we ask for ------------------------------

PS_FORMAT = "{{.Names}}\t{{.Image}}\t{{.State}}\t{{.Status}}"
STATS_FORMAT = "{{.Name}}\t{{.MemUsage}}"


@dataclass
class Running:
    name: str
    image: str
    state: str
    status: str
    memory: str | None = None  # docker stats MemUsage: "1.02GiB / 105GiB"


def parse_ps(text: str, stats: str = "") -> list[Running]:
    """`docker ps --format PS_FORMAT` (tab-separated), with `docker stats --no-stream --format STATS_FORMAT` beside it."""
    usage = dict(line.split("\t", 1) for line in stats.splitlines() if line.count("\t") == 1)
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != 4:
            raise ParseError("docker_ps", "NAME<TAB>IMAGE<TAB>STATE<TAB>STATUS lines (docker ps --format ...)", text)
        out.append(Running(*cells, memory=usage.get(cells[0])))
    return out


COMPOSE_VERSION = re.compile(r"^(?:Docker Compose version |docker-compose version )?v?(\d+)\.(\d+)\.(\d+)\S*", re.M)


def compose_major(text: str) -> int | None:
    """The major version `docker compose version` reports; None when the docker CLI has no compose plugin."""
    m = COMPOSE_VERSION.search(text.strip())
    return int(m[1]) if m else None
