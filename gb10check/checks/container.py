"""Container runtime and image: docker and compose v2, the deployment image (present, right architecture, the same
RootFS layers as on rank 0), the GPU seen from inside a container, and no serving container left running."""

import re
import shlex

from ..facts._text import ParseError
from ..facts.docker import Image, compose_major, parse_ps
from ..remedies import Code
from ..verdict import Finding

ARCH = {"aarch64": "arm64", "arm64": "arm64", "x86_64": "amd64", "amd64": "amd64"}
DOCKER_SERVER = "docker version --format '{{.Server.Version}}'"
COMPOSE_VERSION = "docker compose version"


def gpu_probe(image: str, extra_volumes: list[str]) -> str:
    """What the deployment's containers get: --gpus all (the compose file's GPU reservation), its extra volumes; never pulls."""
    volumes = " ".join(f"-v {shlex.quote(v)}" for v in extra_volumes)
    return f"docker run --rm --pull never --gpus all {volumes} {shlex.quote(image)} nvidia-smi -L".replace("  ", " ")


def _first_line(text: str) -> str:
    """The line that says what went wrong (docker ends its errors with a "Run 'docker ... --help'" hint)."""
    lines = [line for line in text.strip().splitlines() if line.strip() and not line.startswith(("Run 'docker", "See 'docker"))]
    return (lines or ["<no output>"])[-1][:200]


def judge_runtime(node: str, user: str, server_rc: int, server_out: str, compose_out: str) -> list[Finding]:
    f = []
    if server_rc == 127 or "not found" in server_out and server_rc != 0:
        f.append(Finding(Code.DOCKER_MISSING, node, _first_line(server_out), "the docker CLI and daemon"))
    elif server_rc != 0:
        f.append(Finding(Code.DOCKER_UNREACHABLE, node, _first_line(server_out), f"the docker daemon reachable by {user}", user=user))
    major = compose_major(compose_out)
    if server_rc != 127 and (major is None or major < 2):
        f.append(Finding(Code.COMPOSE_V2_MISSING, node, f"`docker compose version`: {_first_line(compose_out)}", "compose v2 or newer"))
    return f


def judge_image(node: str, image_name: str, image: Image | None, missing_text: str, machine: str) -> list[Finding]:
    """image None: `docker image inspect` failed with missing_text."""
    if image is None:
        return [Finding(Code.IMAGE_MISSING, node, f"no image {image_name} ({_first_line(missing_text)})",
                        f"{image_name} loaded on every node", image=image_name)]
    want = ARCH.get(machine.strip(), machine.strip())
    if image.architecture != want:
        return [Finding(Code.IMAGE_ARCH, node, f"{image_name} is {image.os}/{image.architecture}",
                        f"{want} like the node ({machine.strip()})", arch=want)]
    return []


def judge_same_layers(node: str, head: str, image_name: str, mine: Image, heads: Image) -> list[Finding]:
    if mine.layers == heads.layers:
        return []
    differ = [i for i, (a, b) in enumerate(zip(mine.layers, heads.layers)) if a != b]
    first = differ[0] if differ else min(len(mine.layers), len(heads.layers))
    return [Finding(Code.IMAGE_LAYERS_DIFFER, node,
                    f"{image_name}: {len(mine.layers)} RootFS layers, first difference at layer {first} "
                    f"({(mine.layers[first:first + 1] or ['none'])[0][:19]}...)",
                    f"the {len(heads.layers)} layers of {head} (the image ID may differ after docker load, the layers may not)",
                    head=head, image=image_name)]


def judge_gpu_in_container(node: str, command: str, rc: int, output: str) -> list[Finding]:
    """Whether a GPU is visible at all; which GPU it is, test_gpu_name judges on the host."""
    if rc == 0 and re.search(r"^GPU 0: ", output, re.M):
        return []
    return [Finding(Code.CONTAINER_NO_GPU, node, f"`{command}` exit {rc}: {_first_line(output)}",
                    "the container to list the node's GPU (GPU 0: ...)", command=command)]


def judge_stale(node: str, workdir: str, container_name: str, image: str, ps: str, stats: str) -> list[Finding]:
    """ps, stats: `docker ps` and `docker stats --no-stream` in the suite's formats (facts.docker.PS_FORMAT, STATS_FORMAT)."""
    try:
        running = parse_ps(ps, stats)
    except ParseError as exc:
        return [Finding(Code.GARBLED, node, str(exc), "docker ps output", command="docker ps", kind="docker ps")]
    return [Finding(Code.STALE_CONTAINER, node, f"container {c.name} ({c.image}) {c.status}"
                    + (f", using {c.memory.split(' / ')[0]}" if c.memory else ""),
                    "no serving container running before the deployment", name=c.name, workdir=workdir)
            for c in running if c.state == "running" and (c.name == container_name or c.image == image)]
