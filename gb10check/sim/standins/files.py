"""Files a scenario or the sim puts into a node (its model cache, compose file ...), owned by the node's user."""

import os
import shutil


def make_file(root: str, f: dict, owner: tuple[int, int]) -> None:
    """{"path", and one of "content" | "size" (sparse) | "link" | "tree" (a folder to copy, links kept); optional "mode"}.

    Parents are owned like the file."""
    path = root + f["path"]
    parent = os.path.dirname(path)
    missing = []
    while not os.path.exists(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    for d in missing:
        os.chown(d, *owner)
    if "tree" in f:
        shutil.copytree(f["tree"], path, symlinks=True, dirs_exist_ok=True)
        for top, dirs, files in os.walk(path):
            for name in [top] + [os.path.join(top, x) for x in dirs + files]:
                os.lchown(name, *owner)
        return
    if "link" in f:
        if not os.path.lexists(path):
            os.symlink(f["link"], path)
        os.lchown(path, *owner)
        return
    with open(path, "w") as out:
        if "content" in f:
            out.write(f["content"])
        else:
            out.truncate(f["size"])  # sparse: a 21 GiB shard costs nothing on tmpfs
    os.chmod(path, f.get("mode", 0o644))
    os.chown(path, *owner)
