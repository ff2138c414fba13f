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


# ---- shard read rate ------------------------------------------------------------------------------

# dd's summary as gather.shard_read prints it, in GNU coreutils' forms (8.24+, older, a German locale) and BusyBox's.
DD = {"gnu": "-- shard /h/blobs/3f2a --\n-- direct --\n256+0 records in\n256+0 records out\n"
             "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 0.84 s, 1.3 GB/s\n",
      "old": "1073741824 bytes (1.1 GB) copied, 0.840183 seconds, 1.3 GB/s\n",
      "de": "256+0 Datensätze ein\n256+0 Datensätze aus\n1073741824 Bytes (1,1 GB, 1,0 GiB) kopiert, 0,84 s, 1,3 GB/s\n",
      "busybox": "256+0 records in\n256+0 records out\n1073741824 bytes (1.0GB) copied, 0.840000 seconds, 1.2GB/s\n"}


def test_dd_forms():
    for form, text in DD.items():
        run = parse("dd", text)
        assert (run.bytes, round(run.seconds, 2)) == (1073741824, 0.84), form
    assert parse("dd", "1 byte copied, 5.1e-05 s, 19.6 kB/s\n").seconds == 5.1e-05
    failed = "dd: failed to open '/h/blobs/3f2a': Invalid argument\n1+0 records in\n0 bytes copied, 0.000182 s, 0.0 kB/s\n"
    assert parse("dd", failed).errors == ["dd: failed to open '/h/blobs/3f2a': Invalid argument"]


def test_a_node_reading_twice_as_slowly_warns_with_the_load_time():
    # The seed: 86.4 GiB loaded in about 300 s on one node and 850 s on the fuller, slower one.
    fast, slow = 92771926016 / 300, 92771926016 / 850
    [f] = disk.judge_read_rate("pgx-30", slow, ("pgx-32", fast), 92771926016, 3600)
    assert codes([f]) == [(Code.DISK_SLOW, "pgx-30", True)]
    assert f.text.startswith("[disk-slow] pgx-30: saw 109 MB/s reading a shard (direct I/O), 2.8x slower than pgx-32 (309 MB/s); "
                             "the model's 86.4 GiB load in about 850 s here, 300 s on pgx-32; expected within 2x of the fastest "
                             "node\n  fix: find what slows the disk of pgx-30")
    assert disk.judge_read_rate("pgx-32", fast, ("pgx-32", fast), 92771926016, 3600) == []
    assert disk.judge_read_rate("pgx-30", fast * 0.6, ("pgx-32", fast), 92771926016, 3600) == []


def test_read_rates_read_in_the_unit_that_fits():
    # a slow disk in MB/s (a NAS-backed cache at 4 MB/s is not "0.00 GB/s"), a fast one in GB/s
    assert [disk.rate(r) for r in (4e6, 9.96e6, 40.1e6, 109143442, 999.4e6, 1.3e9)] == [
        "4.0 MB/s", "10 MB/s", "40 MB/s", "109 MB/s", "999 MB/s", "1.30 GB/s"]


def test_a_load_past_the_distributed_timeout_warns():
    [f] = disk.judge_read_rate("pgx-30", 92771926016 / 850, ("pgx-30", 92771926016 / 850), 92771926016, 600, direct=False)
    assert f.seen == ("109 MB/s reading a shard (cached read: the filesystem refused O_DIRECT); the model's 86.4 GiB load in "
                      "about 850 s here")
    assert f.expected == "the load within --distributed-timeout-seconds 600"


def test_the_read_command_runs_here(tmp_path):
    # gather.shard_read on a real folder laid out as the Hugging Face cache (tmpfs or not: direct, or the cached fallback).
    import subprocess

    from gb10check.cluster import load_cluster
    from pathlib import Path

    cluster = load_cluster(Path(__file__).resolve().parent.parent / "cluster.example.yaml")
    cluster = cluster.model_copy(update={"deploy": cluster.deploy.model_copy(update={"hf_cache": str(tmp_path)})})
    snap = tmp_path / "hub" / "models--Qwen--Qwen3.8-Flash-Next-FP8" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    blob = tmp_path / "blob"
    blob.write_bytes(b"\0" * (8 << 20))
    (snap / "model-00001-of-00002.safetensors").symlink_to(blob)
    from gb10check import gather

    out = subprocess.run(["bash", "-c", gather.shard_read(cluster)], capture_output=True, text=True, timeout=120).stdout
    assert f"-- shard {blob} --" in out and ("-- direct --" in out or "-- cached --" in out)
    assert parse("dd", out).bytes == 8 << 20


def test_a_cached_read_is_compared_with_nothing():
    assert disk.judge_read_rate("pgx-30", 1e8, ("pgx-32", 1e10), None, 3600, direct=False) == []
    assert disk.judge_read_rate("pgx-30", 1e8, None, None, 3600) == []
