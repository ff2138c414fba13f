"""docker inspect (container, image, State.Health), `docker compose ps`, `docker compose config`."""

import json
import re
from dataclasses import dataclass, field
from datetime import datetime

import yaml

from ._text import ParseError, is_prompt, parser, yaml_document


def _objects(kind: str, text: str) -> list[dict]:
    """The objects of `docker inspect` output: a JSON array of one or many, or one object (--format '{{json .}}')."""
    stripped = text.strip()
    start = min((i for i in (stripped.find("{"), stripped.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise ParseError(kind, "JSON from docker inspect", text)
    try:
        data, _ = json.JSONDecoder().raw_decode(stripped[start:])
    except json.JSONDecodeError as exc:
        cut = " (cut short)" if exc.pos >= len(stripped[start:]) - 1 or exc.msg.startswith("Unterminated") else ""
        raise ParseError(kind, f"JSON from docker inspect ({exc.msg}{cut})", text) from None
    items = data if isinstance(data, list) else [data]
    if not items:
        raise ParseError(kind, "a non-empty docker inspect array", text)
    if not all(isinstance(item, dict) for item in items):
        raise ParseError(kind, "a JSON object (or an array of them)", text)
    return items


def _one(kind: str, text: str) -> dict:
    return _objects(kind, text)[0]


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _strs(value) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value) -> str | None:
    return value if isinstance(value, str) else None


STAMP = re.compile(r"^(?P<date>\d{4}-\d\d-\d\d)[T ](?P<time>\d\d:\d\d:\d\d)(?:\.(?P<frac>\d+))?\s*(?P<tz>Z|[+-]\d\d:?\d\d)?")


def timestamp(value) -> float | None:
    """Seconds since the epoch of a docker timestamp (RFC 3339, up to 9 fractional digits, Z or an offset);
    None for docker's zero time (0001-01-01T00:00:00Z: never) or anything else."""
    m = STAMP.match(value) if isinstance(value, str) else None
    if not m or m["date"].startswith("0001-"):
        return None
    tz = m["tz"] or "Z"
    tz = "+00:00" if tz == "Z" else (tz if ":" in tz else f"{tz[:3]}:{tz[3:]}")
    try:
        dt = datetime.fromisoformat(f"{m['date']}T{m['time']}{tz}")
    except ValueError:
        return None
    return round(dt.timestamp() + float(f"0.{m['frac']}") if m["frac"] else dt.timestamp(), 6)


@dataclass
class Container:
    name: str
    image: str | None
    status: str  # running | exited | created | restarting | paused | dead | removing
    running: bool
    oom_killed: bool
    exit_code: int | None  # None while running, paused or never started (docker's 0 there means nothing)
    started_at: str | None
    health: str | None  # healthy | unhealthy | starting; None: no healthcheck ran (State.Health absent)
    memory_limit_gib: float | None  # None: no limit
    network_mode: str | None
    ipc_mode: str | None
    restart_policy: str | None
    command: list[str] = field(default_factory=list)
    id: str | None = None
    image_id: str | None = None
    finished_at: str | None = None  # None while it has never finished
    ran_s: float | None = None  # from start to finish, for a container that has finished since its last start
    error: str | None = None  # State.Error ("" is None)
    restart_count: int | None = None
    pid: int | None = None
    healthcheck: bool = False  # Config.Healthcheck defines a test (not NONE)
    gpus: str | None = None  # from HostConfig.DeviceRequests: "all" (Count -1), "N", or the device ids; None: no GPU request
    runtime: str | None = None  # HostConfig.Runtime (runc, nvidia)
    shm_size_gib: float | None = None
    ports: list[str] = field(default_factory=list)  # "HOSTIP:HOSTPORT->PORT/PROTO" from HostConfig.PortBindings
    mounts: list[str] = field(default_factory=list)  # "SOURCE:DESTINATION[:ro]"


def _gpus(host: dict) -> str | None:
    for req in host.get("DeviceRequests") or [] if isinstance(host.get("DeviceRequests"), list) else []:
        if not isinstance(req, dict):
            continue
        caps = [c for group in req.get("Capabilities") or [] if isinstance(group, list) for c in group]
        if "gpu" not in caps and req.get("Driver") != "nvidia":
            continue
        ids = _strs(req.get("DeviceIDs"))
        if ids:
            return ",".join(ids)
        count = _int(req.get("Count"))
        return "all" if count == -1 else str(count) if count is not None else None
    return None


def _ports(host: dict) -> list[str]:
    out = []
    for port, binds in sorted(_dict(host.get("PortBindings")).items()):
        for b in binds if isinstance(binds, list) else []:
            if isinstance(b, dict):
                ip = b.get("HostIp") or "0.0.0.0"
                out.append(f"{ip}:{b.get('HostPort') or ''}->{port}")
    return out


def _container(d: dict, kind: str, text: str) -> Container:
    state, host, config = d.get("State"), _dict(d.get("HostConfig")), _dict(d.get("Config"))
    if not isinstance(state, dict) and "Status" in d and ("Running" in d or "ExitCode" in d):
        state, d = d, {}  # docker inspect --format '{{json .State}}'
    if not isinstance(state, dict) or not isinstance(state.get("Status"), str):
        raise ParseError(kind, "a container object with 'State' (docker inspect CONTAINER)", text)
    mem = host.get("Memory") if isinstance(host.get("Memory"), (int, float)) else 0
    shm = host.get("ShmSize") if isinstance(host.get("ShmSize"), int) else 0
    started, finished = timestamp(state.get("StartedAt")), timestamp(state.get("FinishedAt"))
    test = _strs(_dict(config.get("Healthcheck")).get("Test"))
    return Container(
        name=str(d.get("Name", "")).lstrip("/"),
        image=_str(config.get("Image")),
        status=state["Status"],
        running=bool(state.get("Running")),
        oom_killed=bool(state.get("OOMKilled")),
        exit_code=None if state["Status"] in ("running", "created", "paused") else _int(state.get("ExitCode")),
        started_at=_str(state.get("StartedAt")) if started else None,
        health=_str(_dict(state.get("Health")).get("Status")),
        memory_limit_gib=round(mem / 2**30, 3) if mem else None,
        network_mode=_str(host.get("NetworkMode")),
        ipc_mode=_str(host.get("IpcMode")),
        restart_policy=_str(_dict(host.get("RestartPolicy")).get("Name")),
        command=[*_strs(config.get("Entrypoint")), *_strs(config.get("Cmd"))],
        id=_str(d.get("Id")),
        image_id=_str(d.get("Image")),
        finished_at=_str(state.get("FinishedAt")) if finished else None,
        ran_s=round(finished - started, 3) if started and finished and finished >= started else None,
        error=_str(state.get("Error")) or None,
        restart_count=_int(d.get("RestartCount")),
        pid=_int(state.get("Pid")) or None,
        healthcheck=bool(test) and test[0] != "NONE",
        gpus=_gpus(host),
        runtime=_str(host.get("Runtime")),
        shm_size_gib=round(shm / 2**30, 3) if shm else None,
        ports=_ports(host),
        mounts=[f"{m.get('Source', '')}:{m.get('Destination', '')}" + ("" if m.get("RW", True) else ":ro")
                for m in d.get("Mounts") or [] if isinstance(m, dict)] if isinstance(d.get("Mounts"), list) else [],
    )


@parser
def parse_container(text: str) -> "Container | list[Container]":
    """`docker inspect CONTAINER`: one Container; for several containers at once, a list of them."""
    items = [_container(d, "docker_inspect", text) for d in _objects("docker_inspect", text)]
    return items[0] if len(items) == 1 else items


@dataclass
class Health:
    status: str  # healthy | unhealthy | starting | none (no healthcheck: State.Health absent or null)
    failing_streak: int
    last_exit_code: int | None
    checks: int = 0  # entries in the log (docker keeps the last 5)
    last_output: str | None = None
    last_end: str | None = None


HEALTH_STATES = ("healthy", "unhealthy", "starting", "none")


@parser
def parse_health(text: str) -> Health:
    if text.strip() in ("null", "<nil>", "<no value>"):  # --format '{{json .State.Health}}' without a healthcheck
        return Health("none", 0, None)
    d = _one("docker_health", text)
    if "State" in d:  # a whole docker inspect
        if not isinstance(d["State"], dict):
            raise ParseError("docker_health", "a State.Health object with 'Status'", text)
        if d["State"].get("Health") is None:
            return Health("none", 0, None)
        d = _dict(d["State"].get("Health"))
    elif "Health" in d or ("Running" in d and "FailingStreak" not in d):  # --format '{{json .State}}': its Status is the container's
        if d.get("Health") is None:
            return Health("none", 0, None)
        d = _dict(d.get("Health"))
    if not isinstance(d.get("Status"), str) or d["Status"] not in HEALTH_STATES:
        raise ParseError("docker_health", "a State.Health object with 'Status' (healthy, unhealthy, starting or none)", text)
    log = [e for e in d.get("Log") or [] if isinstance(e, dict)] if isinstance(d.get("Log"), list) else []
    streak = _int(d.get("FailingStreak"))
    last = log[-1] if log else {}
    output = _str(last.get("Output"))
    return Health(d["Status"], streak or 0, _int(last.get("ExitCode")) if log else None, len(log),
                  output.strip() if output else None, _str(last.get("End")))


@dataclass
class Image:
    id: str
    tags: list[str]
    architecture: str | None
    os: str | None
    layers: list[str]
    size_gib: float | None
    digests: list[str] = field(default_factory=list)  # RepoDigests
    created: str | None = None
    variant: str | None = None  # arm64: v8
    entrypoint: list[str] = field(default_factory=list)  # Config.Entrypoint: what the image runs before any command


@parser
def parse_image(text: str) -> Image:
    d = _one("docker_image_inspect", text)
    rootfs = d.get("RootFS")
    if not isinstance(rootfs, dict):
        raise ParseError("docker_image_inspect", "an image object with 'RootFS' (docker image inspect IMAGE)", text)
    size = _int(d.get("Size"))
    return Image(str(d.get("Id", "")), _strs(d.get("RepoTags")), _str(d.get("Architecture")), _str(d.get("Os")),
                 _strs(rootfs.get("Layers")), round(size / 2**30, 3) if size is not None else None,
                 _strs(d.get("RepoDigests")), _str(d.get("Created")), _str(d.get("Variant")),
                 _strs(_dict(d.get("Config")).get("Entrypoint")))


@dataclass
class Port:
    host_ip: str | None  # None: not published (only exposed)
    host_port: str | None
    port: str  # the container's port (or range)
    protocol: str


@dataclass
class ComposeService:
    name: str
    image: str
    service: str
    status: str
    state: str  # running | exited | restarting | paused | created | dead | removing
    health: str | None  # healthy | unhealthy | starting; None: no healthcheck
    ports: str
    exit_code: int | None = None  # "Exited (137)", "Restarting (1)", docker-compose 1.x "Exit 137"
    published: list[Port] = field(default_factory=list)  # the ports bound on the host


PORT = re.compile(r"^(?:(?P<ip>\[[0-9a-fA-F:]*\]|[0-9a-fA-F.:]*?):(?P<hport>\d+(?:-\d+)?)->)?(?P<port>\d+(?:-\d+)?)/(?P<proto>tcp|udp|sctp)$")
STATUS_STATE = re.compile(r"^(?P<word>Up|Exited|Exit|Restarting|Created|Paused|Dead|Removing|running|exited|restarting|created|paused|dead)\b"
                          r"(?:\s*\(?(?P<code>-?\d+)\)?)?", re.I)
HEALTH = re.compile(r"\((healthy|unhealthy|health: starting|starting)\)")


def _port_list(ports: str) -> list[Port]:
    out = []
    for item in (p.strip() for p in ports.split(",")):
        m = PORT.match(item)
        if m and m["hport"]:
            out.append(Port(m["ip"] if m["ip"] is not None else None, m["hport"], m["port"], m["proto"]))
    return out


def _service(name: str, image: str, service: str, status: str, ports: str, state: str | None = None,
             health: str | None = None, exit_code: int | None = None) -> ComposeService:
    m = STATUS_STATE.match(status.strip())
    word = (m["word"].lower() if m else (state or "unknown").lower())
    word = {"up": "running", "exit": "exited"}.get(word, word)
    if word == "running" and "(Paused)" in status:
        word = "paused"
    if exit_code is None and m and m["code"] is not None and word in ("exited", "restarting"):
        exit_code = int(m["code"])
    if health is None and (h := HEALTH.search(status)):
        health = "starting" if "starting" in h[1] else h[1]
    return ComposeService(name, image, service, status, (state or word).lower(), health or None, ports, exit_code, _port_list(ports))


def _table(lines: list[str], header_at: int) -> list[dict]:
    header = lines[header_at]
    cols = [(m.group(), m.start()) for m in re.finditer(r"\S+(?: \S+)*", header)]  # "CONTAINER ID" is one column
    rows = []
    for line in lines[header_at + 1:]:
        if not line.strip() or set(line.strip()) <= {"-"}:
            continue
        # docker pads its columns with 3 spaces: split there when that gives the header's columns (a paste that moved
        # the row against its header, a wide character); else by the header's positions.
        parts = re.split(r"\s{2,}", line.strip())
        if len(parts) == len(cols) - 1 and cols[-1][0] == "PORTS":
            parts.append("")
        if len(parts) == len(cols):
            rows.append({name: part for (name, _), part in zip(cols, parts)})
            continue
        cells = {}
        for i, (name, start) in enumerate(cols):
            end = cols[i + 1][1] if i + 1 < len(cols) else None
            cells[name] = line[start:end].strip()
        rows.append(cells)
    return rows


# The column names `docker ps` / `docker compose ps --format 'table {{.Service}}\t{{.Status}}...'` print, in any order.
TABLE_COLUMNS = {"CONTAINER ID", "ID", "IMAGE", "COMMAND", "CREATED", "CREATED AT", "RUNNING FOR", "STATUS", "STATE", "PORTS",
                 "NAMES", "NAME", "SERVICE", "PROJECT", "SIZE", "LABELS", "MOUNTS", "NETWORKS", "LOCAL VOLUMES", "PUBLISHERS"}


def _custom_header(line: str) -> bool:
    """A header of a table format: only known column names, a name (NAME(S) or SERVICE) and a STATUS or STATE among them."""
    cols = set(re.split(r"\s{2,}", line.strip()))
    return len(cols) >= 2 and cols <= TABLE_COLUMNS and bool(cols & {"NAME", "NAMES", "SERVICE"}) and bool(cols & {"STATUS", "STATE"})


V1_ROW = re.compile(r"^(?P<name>\S+)\s+(?P<command>.*?)\s+(?P<state>Up(?: \((?:healthy|unhealthy|health: starting|Paused)\))?|Exit -?\d+|"
                    r"Restarting|Paused|Created|Dead|Removing)(?:\s+(?P<ports>\S.*?))?\s*$")


def _compose_json(text: str) -> list[ComposeService] | None:
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    items: list = []
    try:
        value = json.loads(stripped)
        items = value if isinstance(value, list) else [value]
    except json.JSONDecodeError:
        for line in stripped.splitlines():  # compose >= 2.21: one object per line
            if line.strip():
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError:
                    raise ParseError("compose_ps", "`docker compose ps --format json` (a JSON array, or one object a line)",
                                     text) from None
    out = []
    for d in items:
        if isinstance(d, dict) and not isinstance(d.get("Name"), str) and isinstance(d.get("Names"), str):
            d = {**d, "Name": d["Names"]}  # `docker ps --format json` (or '{{json .}}') names it Names
        if not isinstance(d, dict) or not isinstance(d.get("Name"), str):
            raise ParseError("compose_ps", "compose ps JSON objects with 'Name'", text)
        ports = _str(d.get("Ports"))
        if ports is None:
            pubs = [p for p in d.get("Publishers") or [] if isinstance(p, dict)] if isinstance(d.get("Publishers"), list) else []
            ports = ", ".join(f"{p.get('URL') or '0.0.0.0'}:{p.get('PublishedPort')}->{p.get('TargetPort')}/{p.get('Protocol') or 'tcp'}"
                              if p.get("PublishedPort") else f"{p.get('TargetPort')}/{p.get('Protocol') or 'tcp'}" for p in pubs)
        out.append(_service(d["Name"], _str(d.get("Image")) or "", _str(d.get("Service")) or "", _str(d.get("Status")) or "",
                            ports, _str(d.get("State")) or None, _str(d.get("Health")) or None,
                            _int(d.get("ExitCode")) if d.get("State") in ("exited", "restarting") else None))
    return out


NOISE = re.compile(r"^(?:WARN|WARNING|INFO|ERRO|ERROR)\[\d+\]|^time=\"[^\"]*\" level=")


@parser
def parse_compose_ps(text: str) -> list[ComposeService]:
    """`docker compose ps` tables (compose v2, with or without IMAGE/CREATED; docker-compose 1.x `Name Command State
    Ports`; `docker ps`, also as `--format 'table {{.Names}}\t{{.Status}}...'`), or `docker compose ps --format json` (an array, or one object a line)."""
    lines = [line for line in text.splitlines() if not is_prompt(line) and not NOISE.match(line)]
    if (found := _compose_json("\n".join(lines))) is not None:
        return found
    header_at = next((i for i, line in enumerate(lines) if re.match(r"^\s*(?:NAMES?|CONTAINER ID|Name)\s{2,}", line)
                      or _custom_header(line)), None)
    if header_at is None:
        raise ParseError("compose_ps", "a table whose header starts with NAME (output of `docker compose ps`)", text)
    header = lines[header_at].strip()
    if header.startswith("Name") and "State" in header:  # docker-compose 1.x
        out = []
        for line in lines[header_at + 1:]:
            if not line.strip() or set(line.strip()) <= {"-"}:
                continue
            m = V1_ROW.match(line.strip())
            if not m:
                raise ParseError("compose_ps", "docker-compose 1.x rows: NAME COMMAND STATE [PORTS]", line)
            out.append(_service(m["name"], "", "", m["state"], m["ports"] or ""))
        return out
    rows = _table(lines, header_at)
    if rows and not all(("STATUS" in r or "STATE" in r) for r in rows):
        raise ParseError("compose_ps", "a table with a STATUS column", text)
    services = [_service(r.get("NAME") or r.get("NAMES") or r.get("SERVICE", ""), r.get("IMAGE", ""), r.get("SERVICE", ""),
                         r.get("STATUS") or r.get("STATE", ""), r.get("PORTS", "")) for r in rows]
    # A row whose status does not read (cut, or the header again) is no container in an unknown state; a container
    # listed twice is a damaged paste.
    for service, row in zip(services, rows):
        if not STATUS_STATE.match((row.get("STATUS") or row.get("STATE", "")).strip()):
            raise ParseError("compose_ps", "a status ('Up 3 minutes (healthy)', 'Exited (1) ...') in every row",
                             " ".join(v for v in row.values() if v))
        if [s.name for s in services].count(service.name) > 1:
            raise ParseError("compose_ps", f"each container once ({service.name} is listed twice)", service.name)
    return services


@parser
def parse_compose_config(text: str) -> dict:
    """`docker compose config` (or a compose file) as the YAML mapping; services must be present."""
    body = "\n".join(line for line in text.splitlines() if not is_prompt(line) and not NOISE.match(line))
    try:
        data = yaml_document(body)
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
