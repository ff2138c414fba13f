"""NCCL's configuration files and net plugin: the conf-file reader against NCCL's own rules (src/misc/param.cc), the
probe's real output on this machine, real NCCL_DEBUG=INFO logs' plugin lines (a public capture and our own H200 runs),
and the judge (checks/nccl_config.py). The fault scenarios on the simulated pair are nccl-conf-host-conflict,
nccl-conf-image-silent and nccl-net-plugin-image (test_checks_on_sim.py, judged from their recordings)."""

import os
import subprocess

import pytest

from gb10check import facts
from gb10check.checks import nccl_config
from gb10check.facts import ParseError
from gb10check.facts.nccl_conf import NcclConfProbe, parse_conf, parse_net_plugin, parse_probe
from gb10check.gather import commands
from gb10check.remedies import Code
from gb10check.verdict import fix

from .conftest import read_capture

# ---- the files, read as NCCL's setEnvFile reads them ------------------------------------------------------------------


def test_conf_lines_split_at_the_first_equals_and_keep_their_spaces():
    text = "NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0\nNCCL_DEBUG = INFO\nNCCL_SOCKET_IFNAME=eth0 \n"
    assert parse_conf(text) == {"NCCL_IB_HCA": "=rocep1s0f0,roceP2p1s0f0", "NCCL_DEBUG ": " INFO", "NCCL_SOCKET_IFNAME": "eth0 "}


def test_conf_comment_only_at_the_start_of_a_line_and_lines_without_equals_skipped():
    text = "# NCCL_P2P_DISABLE=1\n  # NCCL_PROTO=Simple\nNCCL_ALGO=Ring # not a comment\njust words\n\n"
    assert parse_conf(text) == {"  # NCCL_PROTO": "Simple", "NCCL_ALGO": "Ring # not a comment"}


def test_conf_first_line_of_a_key_wins_and_crlf_is_dropped():
    # setenv(key, value, 0): the second line finds the variable set and leaves it
    assert parse_conf("NCCL_IB_HCA=mlx5_0\r\nNCCL_IB_HCA=mlx5_1\r\n") == {"NCCL_IB_HCA": "mlx5_0"}
    assert parse_conf("NCCL_IB_TIMEOUT=\n") == {"NCCL_IB_TIMEOUT": ""}


# ---- the probe's own output, run here for real ------------------------------------------------------------------------


def run_probe(tmp_path, conf_home: str | None = None, conf_etc_note: bool = False, plugin: bool = False,
              env: dict | None = None) -> str:
    """NCCL_CONF_IMAGE run by this machine's sh with HOME in tmp_path (its /etc/nccl.conf is this machine's: none here)."""
    home = tmp_path / "home"
    home.mkdir()
    if conf_home is not None:
        (home / ".nccl.conf").write_text(conf_home)
    lib = tmp_path / "lib"
    lib.mkdir()
    if plugin:
        (lib / "libnccl-net.so").write_text("not a library\n")
    run_env = {"PATH": os.environ["PATH"], "HOME": str(home), "LD_LIBRARY_PATH": f"{lib}:/nonexistent", **(env or {})}
    out = subprocess.run(["sh", "-c", commands.NCCL_CONF_IMAGE], env=run_env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.skipif(os.path.exists("/etc/nccl.conf"), reason="this machine has an /etc/nccl.conf of its own")
def test_probe_output_read_as_printed(tmp_path):
    text = run_probe(tmp_path, conf_home="# tuned\nNCCL_PROTO=Simple\nNCCL_IB_HCA=mlx5_0", plugin=True,
                     env={"NCCL_DEBUG": "WARN"})
    probe = facts.parse("nccl_conf_probe", text)
    home = str(tmp_path / "home")
    assert probe.home == home
    assert probe.files == {f"{home}/.nccl.conf": {"NCCL_PROTO": "Simple", "NCCL_IB_HCA": "mlx5_0"}, "/etc/nccl.conf": None}
    assert list(probe.files) == [f"{home}/.nccl.conf", "/etc/nccl.conf"]  # NCCL's order: home first
    assert probe.env == {"NCCL_DEBUG": "WARN", "LD_LIBRARY_PATH": f"{tmp_path}/lib:/nonexistent"}
    assert ("ld_library_path", "libnccl-net.so", f"{tmp_path}/lib/libnccl-net.so") in probe.libraries


def test_probe_reads_nccl_conf_file_in_place_of_home(tmp_path):
    other = tmp_path / "other.conf"
    other.write_text("NCCL_ALGO=Tree\n")
    probe = facts.parse("nccl_conf_probe", run_probe(tmp_path, conf_home="NCCL_ALGO=Ring\n", env={"NCCL_CONF_FILE": str(other)}))
    assert probe.files[str(other)] == {"NCCL_ALGO": "Tree"} and str(tmp_path / "home" / ".nccl.conf") not in probe.files


def test_probe_cut_or_foreign_output_is_a_parse_error(tmp_path):
    text = run_probe(tmp_path, conf_home="NCCL_PROTO=Simple\n")
    with pytest.raises(ParseError, match="cut"):
        facts.parse("nccl_conf_probe", text[:text.index("-- gb10check: done --")])
    with pytest.raises(ParseError, match="end mark"):
        facts.parse("nccl_conf_probe", text.replace("-- gb10check: end --", "", 1))
    with pytest.raises(ParseError, match="nccl_conf_probe: expected"):
        facts.parse("nccl_conf_probe", "docker: Error response from daemon: No such image: vllm:local\n")
    with pytest.raises(ParseError, match="together"):
        start, end = text.index("-- gb10check: libraries --"), text.index("-- gb10check: done --")
        facts.parse("nccl_conf_probe", text[:start] + text[end:])
    with pytest.raises(ParseError, match="could not be read"):
        facts.parse("nccl_conf_probe", "-- gb10check: home /root --\n-- gb10check: unreadable /etc/nccl.conf --\n"
                                       "-- gb10check: done --\n")


def test_host_probe_runs_and_reads(tmp_path):
    out = subprocess.run(["sh", "-c", commands.NCCL_CONF_HOST], capture_output=True, text=True, timeout=30)
    probe = parse_probe(out.stdout)
    assert probe.home == "/root" and list(probe.files) == ["/root/.nccl.conf", "/etc/nccl.conf"]
    assert probe.env is None and probe.libraries is None


# ---- NCCL_DEBUG=INFO logs: which net plugin ran -----------------------------------------------------------------------


def test_net_plugin_none_found_nccl_2_8_public_log():
    log = parse_net_plugin(read_capture(
        "nccl_tests/t4-single-node-2gpu-all_reduce-nccl-2.8.3-socket-ibverbs-missing-WARN-root-prompt-cmd-TRUNCATED-nccl-issue428.txt"))
    assert (log.external, log.not_found, log.networks, log.internal) == (None, ["libnccl-net.so"], ["Socket"], True)


@pytest.mark.parametrize("name", ["ours/nccl_tests/h200x2-all_reduce_perf-8-256M-f4-g2-p2p.txt",
                                  "ours/nccl_tests/h200x2-all_reduce_perf-8-256M-f4-g2-socket.txt"])
def test_net_plugin_none_found_nccl_2_28_our_h200(name):
    log = parse_net_plugin(read_capture(name))
    assert (log.external, log.not_found, log.networks, log.internal) == (None, ["libnccl-net.so"], ["Socket"], True)


def test_net_plugin_log_that_does_not_say_is_unknown():
    # NET/IB lines only, as an author selected them: no plugin line, no `Using network`
    log = parse_net_plugin(read_capture("nccl_tests/dgxspark-pair-nccl-2.30.7-NCCL_DEBUG-lines-GDR-disabled-dlvsym-dmabuf-"
                                        "symmetric-mem-author-selected-no-prefix-idx67223248947.txt"))
    assert log.internal is None and log.external is None


def test_net_plugin_loaded_lines_of_each_nccl_format():
    # NCCL's own format strings: `NET/Plugin: Loaded net plugin %s (v%d)` (2.12-2.2x), `Successfully loaded external
    # plugin %s` (2.2x), `Successfully loaded external network plugin %s` and `Assigned NET plugin %s to comm` (2.28+)
    old = parse_net_plugin("h:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v6 (v6)\n"
                           "h:1:1 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n"
                           "h:1:2 [0] NCCL INFO Using network IBext\n")
    assert (old.external, old.path, old.networks, old.internal) == (
        "NCCL RDMA Plugin v6", "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so", ["IBext"], False)
    new = parse_net_plugin("h:1:1 [0] NCCL INFO Successfully loaded external network plugin /opt/x/libnccl-net.so\n"
                           "h:1:1 [0] NCCL INFO Assigned NET plugin IBext_v10 to comm\n")
    assert (new.external, new.networks, new.internal) == ("/opt/x/libnccl-net.so", ["IBext_v10"], False)
    own = parse_net_plugin("h:1:1 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.\n"
                           "h:1:1 [0] NCCL INFO Assigned NET plugin IB to comm\n")
    assert (own.not_found, own.networks, own.internal) == (["libnccl-net.so"], ["IB"], True)
    with pytest.raises(ParseError, match="nccl_net_plugin: expected"):
        parse_net_plugin("all_reduce_perf: command not found\n")


# ---- the judge --------------------------------------------------------------------------------------------------------

COMPOSE = {"NCCL_IB_HCA": "=rocep1s0f0,roceP2p1s0f0", "NCCL_SOCKET_IFNAME": "enp1s0f0np0", "NCCL_NET_PLUGIN": "none"}


def probe(files: dict, env: dict | None = None, libraries: list | None = None) -> NcclConfProbe:
    return NcclConfProbe(home="/root", files={p: (parse_conf(t) if t is not None else None) for p, t in files.items()},
                         env=env, libraries=libraries)


def test_a_file_disagreeing_with_the_compose_environment_fails_with_both_values_and_the_fix():
    got = nccl_config.judge_files("spark-b", "image vllm:local", probe({"/root/.nccl.conf": None,
                                                                        "/etc/nccl.conf": "NCCL_SOCKET_IFNAME=eth0\n"}), COMPOSE)
    assert [(f.code, f.where, f.warning) for f in got] == [(Code.NCCL_CONF_CONFLICT, "spark-b:image vllm:local /etc/nccl.conf", False)]
    assert got[0].seen == ("NCCL_SOCKET_IFNAME=eth0 in /etc/nccl.conf (image vllm:local), the compose environment sets "
                           "NCCL_SOCKET_IFNAME=enp1s0f0np0")
    said = fix(got[0].code, **got[0].params)
    assert "delete it from /etc/nccl.conf (image vllm:local on spark-b" in said and "NCCL_SOCKET_IFNAME=eth0" in said


def test_a_key_only_a_file_sets_warns_and_an_agreeing_one_passes():
    got = nccl_config.judge_files("spark-b", "host", probe({"/root/.nccl.conf": "NCCL_PROTO=Simple\nNCCL_NET_PLUGIN=none\n",
                                                            "/etc/nccl.conf": None}), COMPOSE)
    assert [(f.code, f.warning, f.params["key"]) for f in got] == [(Code.NCCL_CONF_SILENT, True, "NCCL_PROTO")]
    assert "NCCL run on the host (nccl-tests) gets it" in got[0].seen


def test_a_key_an_earlier_file_set_is_not_applied_again():
    got = nccl_config.judge_files("n", "image i", probe({"/root/.nccl.conf": "NCCL_ALGO=Ring\n",
                                                         "/etc/nccl.conf": "NCCL_ALGO=Tree\n"}), COMPOSE)
    assert [(f.where, f.params["value"]) for f in got] == [("n:image i /root/.nccl.conf", "Ring")]


def test_a_key_with_spaces_is_a_name_nccl_never_reads():
    got = nccl_config.judge_files("n", "image i", probe({"/etc/nccl.conf": "NCCL_SOCKET_IFNAME = eth0\n"}), COMPOSE)
    assert len(got) == 1 and got[0].warning and "NCCL never reads NCCL_SOCKET_IFNAME" in got[0].seen


def test_the_images_env_is_a_silent_source_but_not_its_nccl_version_label():
    got = nccl_config.judge_files("n", "image i", probe({"/etc/nccl.conf": None}, env={"NCCL_VERSION": "2.28.9",
                                                        "NCCL_NVLS_ENABLE": "0", "NCCL_SOCKET_IFNAME": "eth0",
                                                        "LD_LIBRARY_PATH": "/x"}), COMPOSE)
    assert [(f.code, f.params["key"]) for f in got] == [(Code.NCCL_CONF_SILENT, "NCCL_NVLS_ENABLE")]


LIBS = [("cache", "libnccl-net.so", "/usr/lib/aarch64-linux-gnu/libnccl-net.so"),
        ("ld_library_path", "libnccl-net.so", "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"),
        ("default", "libnccl-net-ofi.so", "/usr/lib/libnccl-net-ofi.so")]


def test_net_plugin_resolved_as_nccl_and_dlopen_do():
    unset = probe({"/etc/nccl.conf": None}, libraries=LIBS)
    assert nccl_config.net_plugin(unset, {})[0] == "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"  # LD_LIBRARY_PATH first
    assert nccl_config.net_plugin(unset, COMPOSE) == (None, "NCCL_NET_PLUGIN=none (the compose environment): no external plugin")
    assert nccl_config.net_plugin(unset, {"NCCL_NET_PLUGIN": "ofi"})[0] == "/usr/lib/libnccl-net-ofi.so"  # NAME -> libnccl-net-NAME.so
    assert nccl_config.net_plugin(probe({"/etc/nccl.conf": None}, libraries=[]), {})[0] is None
    # a file's NCCL_NET_PLUGIN counts where the environment has none; the compose environment wins over it
    in_file = probe({"/etc/nccl.conf": "NCCL_NET_PLUGIN=none\n"}, libraries=LIBS)
    assert nccl_config.net_plugin(in_file, {})[0] is None
    assert nccl_config.net_plugin(in_file, {"NCCL_NET_PLUGIN": "ofi"})[0] == "/usr/lib/libnccl-net-ofi.so"


def test_a_plugin_warns_only_where_the_cluster_wants_nccls_own_ib():
    image = probe({"/etc/nccl.conf": None}, libraries=LIBS)
    got = nccl_config.judge_net_plugin("spark-b", "nvcr.io/nvidia/vllm:26.01-py3", image, {}, wants_internal_ib=True)
    assert [(f.code, f.warning) for f in got] == [(Code.NCCL_NET_PLUGIN, True)]
    assert "NCCL_NET_PLUGIN=none" in fix(got[0].code, **got[0].params)
    assert nccl_config.judge_net_plugin("h", "i", image, {}, wants_internal_ib=False) == []
    assert nccl_config.judge_net_plugin("spark-b", "i", image, COMPOSE, wants_internal_ib=True) == []
