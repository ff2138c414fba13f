"""Judge of the disk check (checks/disk.py) on df output in its real forms (ours: this machine's df) and figures
written here: what is still to be written (model bytes missing, the image if not loaded) against the free space."""

from gb10check.checks import disk
from gb10check.checks.model import parse_listing
from gb10check.facts import parse
from gb10check.remedies import Code

from .conftest import read_capture

GIB = 2**30
# What gather.disk_free prints on a node whose cache and docker data share one 3.7 TiB root filesystem, 61 GiB free.
DF = """-- df -B1 /home/lenovo/vllm/huggingface --
Mounted on             Avail
/              65498251264
-- df -B1 /var/lib/docker --
Mounted on             Avail
/              65498251264
"""
INDEX = '{"metadata": {"total_size": 92771926016}, "weight_map": {"a": "model-00001-of-00002.safetensors"}}'


def codes(findings):
    return [(f.code, f.where, f.warning) for f in findings]


def free_of(text):
    rows = parse("df", text)
    names = {"/home/lenovo/vllm/huggingface": "the Hugging Face cache", "/var/lib/docker": "docker's data"}
    return {names[r.path]: (r.target, r.avail_bytes) for r in rows}


def test_df_forms():
    assert parse("df", read_capture("ours/df/host-df-B1-output-target-avail.txt"))[0].avail_bytes == 80579964928
    assert parse("df", read_capture("ours/df/host-df.txt"))[0].avail_bytes == 78691380 * 1024
    assert parse("df", read_capture("ours/df/host-df-h.txt"))[0].avail_bytes == 76 * GIB
    assert [r.path for r in parse("df", DF)] == ["/home/lenovo/vllm/huggingface", "/var/lib/docker"]


def test_model_not_fitting_fails():
    total = disk.index_total_size(INDEX)
    assert total == 92771926016
    [f] = disk.judge_disk("pgx-32", free_of(DF), {"the Hugging Face cache": total, "docker's data": 0}, total + 20 * GIB)
    assert codes([f]) == [(Code.DISK_FULL, "pgx-32", False)]
    assert f.text.startswith("[disk-full] pgx-32: saw 61.0 GiB free on / (the Hugging Face cache and docker's data); expected at "
                             "least 86.4 GiB for what is still to be written there\n  fix: free space on / of pgx-32")


def test_little_room_left_warns():
    # The model is there already (its blobs listed), the image is not: 15 GiB to load on 61 GiB free, margin 10.6 GiB.
    listing = parse_listing("f 644 92771926016 ./blobs/3f2a\nl ./snapshots/abc/model.safetensors ../../blobs/3f2a\n")
    present = disk.blob_bytes(listing)
    assert present == 92771926016
    needs = {"the Hugging Face cache": 92771926016 - present, "docker's data": 55 * GIB}
    [f] = disk.judge_disk("pgx-32", free_of(DF), needs, 92771926016 + 15 * GIB)
    assert codes([f]) == [(Code.DISK_LOW, "pgx-32", True)]
    assert "expected 55.0 GiB still to write + 10.1 GiB margin" in f.text
    assert disk.judge_disk("pgx-32", free_of(DF), {"docker's data": 15 * GIB}, 92771926016 + 15 * GIB) == []


def test_separate_filesystems_are_judged_apart():
    free = {"the Hugging Face cache": ("/data", 200 * GIB), "docker's data": ("/", 1 * GIB)}
    [f] = disk.judge_disk("pgx-30", free, {"the Hugging Face cache": 90 * GIB, "docker's data": 0}, 110 * GIB)
    assert codes([f]) == [(Code.DISK_LOW, "pgx-30", True)] and "1.0 GiB free on / (docker's data)" in f.text
    assert disk.index_total_size("not json") is None and disk.index_total_size('{"metadata": {}}') is None
