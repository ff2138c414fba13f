"""The simulated deployment image: a tiny root filesystem that `docker import` turns into one layer.

It holds only the skeleton of a Debian root (usr-merged links, passwd); what a real vLLM image
carries in its layers (Python, the vLLM install) the sim's compose file bind-mounts read-only from
the node (`deploy.extra_volumes` of the sim's cluster file). The tar is built the same way every
time, so every node that imports it gets the same RootFS layer, as after a correct `docker save |
docker load`; `variant` builds a different layer under the same tag (a node whose image was
rebuilt instead of copied).
"""

import io
import tarfile
from pathlib import Path

from . import provision

NAME = "gb10sim/vllm-cpu:local"


def search_path(*python_bins: str) -> str:
    """The image's PATH: the stand-ins' image-bin first, whose python3 answers the compute and collectives canaries as
    the node's GPU and RDMA state says (gb10check/sim/standins/image_python.py) and hands every other program to the
    next python3 on the PATH: the first of `python_bins`, else the vLLM venv's."""
    from .standins.tools import IMAGE_BIN

    return ":".join([IMAGE_BIN, *python_bins, str(provision.vllm_bin().parent),
                     "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"])


def changes() -> list[str]:
    return [f"ENV PATH={search_path()}", "ENV HOME=/root", "LABEL org.opencontainers.image.title=gb10sim-vllm-cpu"]


def build(path: Path, variant: str = "") -> Path:
    entries: list[tuple[str, str, str | bytes]] = [("dir", d, "") for d in (
        "usr", "etc", "root", "proc", "sys", "dev", "run", "var", "var/cache", "var/tmp")]
    entries += [("dir", "tmp", ""), ("link", "bin", "usr/bin"), ("link", "sbin", "usr/sbin"), ("link", "lib", "usr/lib"),
                ("link", "lib64", "usr/lib64"),
                ("file", "etc/passwd", b"root:x:0:0:root:/root:/bin/bash\n"), ("file", "etc/group", b"root:x:0:\n"),
                ("file", "etc/gb10sim-image", f"gb10sim vllm-cpu image{(' ' + variant) if variant else ''}\n".encode())]
    with tarfile.open(path, "w") as tar:
        for kind, name, data in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 0
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o1777 if name in ("tmp", "var/tmp") else 0o755
                tar.addfile(info)
            elif kind == "link":
                info.type, info.linkname = tarfile.SYMTYPE, data
                tar.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    path.chmod(0o644)
    return path
