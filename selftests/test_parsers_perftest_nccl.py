"""perftest and nccl-tests outputs in the forms real runs print, beyond the captures (inputs written here, in the
tools' formats, with made-up hosts and values), and the NCCL judge on them."""

import pytest

from gb10check.checks.nccl import judge_nccl
from gb10check.cluster import Expect
from gb10check.facts import ParseError, nccl, perftest
from gb10check.remedies import Code

DASH = "-" * 87

HEADER_MB = f"""\
{DASH}
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_2
 Number of qps   : 2\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 TX depth        : 128
 CQ Moderation   : 100
 Mtu             : 4096[B]
 Link type       : Ethernet
 GID index       : 5
 Max inline data : 0[B]
 rdma_cm QPs\t : OFF
 Data ex. method : Ethernet
{DASH}
"""


def codes(findings):
    return [(f.code, f.warning) for f in findings]


# ---- perftest -----------------------------------------------------------------------------------------------

def test_mb_per_sec_sweep_judges_the_largest_size_and_reads_tab_separated_header_fields():
    rows = "\n".join(f" {2 ** n:<7}    5000           {bw:<7.2f}            {bw * 0.99:<7.2f}\t\t   0.5{n:05d}"
                     for n, bw in [(1, 9.5), (10, 2100.0), (16, 11020.0), (23, 11790.44)])
    text = HEADER_MB + f""" local address: LID 0000 QPN 0x0a11 PSN 0x1b2c3d RKey 0x00abcd VAddr 0x007f0000001000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:40:7:21
 local address: LID 0000 QPN 0x0a12 PSN 0x2b2c3d RKey 0x00abcd VAddr 0x007f0000101000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:40:7:21
 remote address: LID 0000 QPN 0x0b07 PSN 0x3c4d5e RKey 0x00dcba VAddr 0x007f0000201000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:40:7:22
 remote address: LID 0000 QPN 0x0b08 PSN 0x4c4d5e RKey 0x00dcba VAddr 0x007f0000301000
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:40:7:22
{DASH}
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
{rows}
{DASH}
"""
    r = perftest.parse(text)
    assert (r.device, r.qps, r.gid_index, r.mtu_bytes, r.connection_type) == ("mlx5_2", 2, 5, 4096, "RC")
    assert r.unit == "MB/sec" and len(r.bw_rows) == 4
    assert r.bw_bytes == 8388608
    assert r.bw_average_gbps == pytest.approx(11790.44 * 0.99 * 1048576 * 8 / 1e9, abs=0.01)  # not the mean of the sweep
    assert r.bw_peak_gbps == pytest.approx(11790.44 * 1048576 * 8 / 1e9, abs=0.01)
    assert [a.side for a in r.addresses] == ["local", "local", "remote", "remote"]
    assert (r.local_ipv4, r.remote_ipv4) == ("10.40.7.21", "10.40.7.22")
    assert r.complete and r.error is None


def test_remote_printed_first_still_reads_each_gid_by_its_label():
    text = HEADER_MB.replace("Number of qps   : 2", "Number of qps   : 1") + f""" remote address: LID 0000 QPN 0x0b07 PSN 0x3c4d5e
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:172:16:9:2
 local address: LID 0000 QPN 0x0a11 PSN 0x1b2c3d
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:172:16:9:1
{DASH}
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      40000            98.10              97.95              0.186830
{DASH}
"""
    r = perftest.parse(text)
    assert (r.local_ipv4, r.remote_ipv4) == ("172.16.9.1", "172.16.9.2")
    assert r.bw_average_gbps == 97.95 and r.unit == "Gb/sec"


def test_old_comma_address_lines_and_link_local_gid():
    text = HEADER_MB.replace("Number of qps   : 2", "Number of qps   : 1") + f""" local address: LID 0x0003, QPN 0x004a, PSN 0x0d56ff, RKey 0x08002a, VAddr 0x002aab1c000000
 GID: 254:128:00:00:00:00:00:00:02:12:151:255:254:40:11:66
 remote address: LID 0x0007, QPN 0x004b, PSN 0x41a2b0, RKey 0x08002b, VAddr 0x002b6a5c000000
 GID: 254:128:00:00:00:00:00:00:02:12:151:255:254:40:11:67
{DASH}
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 65536      5000           6120.33            6119.80              0.097917
{DASH}
"""
    r = perftest.parse(text)
    assert [(a.lid, a.qpn, a.psn) for a in r.addresses] == [("0x0003", "0x004a", "0x0d56ff"), ("0x0007", "0x004b", "0x41a2b0")]
    assert r.addresses[0].gid.startswith("254:128:") and r.local_ipv4 is None  # link-local GID: no IPv4 in it
    assert r.bw_average_gbps == pytest.approx(6119.80 * 1048576 * 8 / 1e9, abs=0.001)


@pytest.mark.parametrize(("flag", "expected"), [("--report_gbits ", 91.3), ("--report_gbit ", 91.3),  # getopt takes a prefix
                                                ("", pytest.approx(91.3 * 1048576 * 8 / 1e9, abs=0.001))])
def test_unit_from_the_command_line_when_the_column_header_was_cut(flag, expected):
    text = f"""user@gb10-a:~$ ib_write_bw -d rocep1s0f1 -x 3 -D 5 {flag}10.0.0.2
 65536      870000           0.00               91.30              0.174120
{DASH}
"""
    r = perftest.parse(text)
    assert r.bw_average_gbps == expected
    assert r.unit == ("Gb/sec" if flag else "MB/sec")


def test_rows_of_an_unknown_unit_are_not_read():
    with pytest.raises(ParseError, match="^perftest: expected"):
        perftest.parse(" 65536      870000           0.00               91.30              0.174120\n")


def test_qos_sl_column_and_per_port_columns_map_by_header():
    qos = perftest.parse(HEADER_MB + f"""{DASH}
 #bytes    #sl      #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      3           1000           88.12            87.90                  0.167655
""")
    assert (qos.bw_rows[0].iterations, qos.bw_average_gbps, qos.bw_peak_gbps) == (1000, 87.9, 88.12)
    ports = perftest.parse(HEADER_MB + f"""{DASH}
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]   BW Port1[Gb/sec]   MsgRate Port1[Mpps]   BW Port2[Gb/sec]   MsgRate Port2[Mpps]
 65536      1000           180.20            179.60\t\t   0.342560        89.80            0.171280              89.80            0.171280
""")
    assert (ports.bw_average_gbps, ports.bw_rows[0].msg_rate_mpps) == (179.6, 0.34256)


def test_latency_duration_mode_and_old_five_columns():
    dur = perftest.parse(f"""{DASH}
                    Send Latency Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
{DASH}
 #bytes        #iterations       t_avg[usec]    tps average
 2             3150224            1.90          525301.47
{DASH}
""")
    assert (dur.lat_rows[0].t_avg_us, dur.lat_rows[0].tps, dur.lat_rows[0].t_min_us) == (1.90, 525301.47, None)
    old = perftest.parse(f"""{DASH}
                    RDMA_Read Latency Test
{DASH}
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]
 2       1000          2.31           9.87         2.40
 4       1000          2.30           7.02         2.39
{DASH}
""")
    assert [(r.bytes, r.t_typical_us, r.t_avg_us) for r in old.lat_rows] == [(2, 2.40, None), (4, 2.39, None)]
    assert old.bw_average_gbps is None and old.error is None


@pytest.mark.parametrize("line", ["* Waiting for client to connect... *", "* Waiting for client rdma_cm QP to connect *"])
def test_server_banner_alone_is_not_a_pass(line):
    r = perftest.parse(f"\n************************************\n{line}\n************************************\n")
    assert r.waiting and r.bw_average_gbps is None
    assert r.error and "banner" in r.error


def test_header_without_rows_is_not_a_pass():
    r = perftest.parse(HEADER_MB)
    assert r.device == "mlx5_2" and r.bw_rows == [] and r.error and "no result rows" in r.error


def test_failure_after_some_rows_is_a_failure_with_its_cause():
    text = HEADER_MB + f"""{DASH}
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 2          5000             0.06               0.05               3.110242
 4          5000             0.12               0.10               3.101877
Completion with error at server
 Failed status 12: wr_id 0 syndrom 0x81
scnt=5000, ccnt=4876
 Failed to complete run_iter_bw function successfully
"""
    r = perftest.parse(text)
    assert len(r.bw_rows) == 2 and not r.complete
    assert r.error == "Completion with error at server: Failed status 12: wr_id 0 syndrom 0x81"


@pytest.mark.parametrize("lines", [
    " Port number 1 state is Init\n Couldn't set the link layer\n Couldn't get context for the device\n",
    " IB device mlx5_9 not found\n Unable to find the Infiniband/RoCE device\n",
    " No IB devices found\n",
    " Failed to create QP.\n",
])
def test_failure_first_lines(lines):
    assert perftest.parse(lines).error == lines.splitlines()[0].strip()


def test_cpufreq_warnings_between_rows_are_warnings_kept_once():
    warn = "Conflicting CPU frequency values detected: 2400.{n}000 != 3000.000000. CPU Frequency is not max."
    text = f"""{DASH}
                    RDMA_Write Latency Test
{DASH}
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]
{warn.format(n=1)}
 2       1000          1.10           3.20         1.15     \t       1.16        \t0.03   \t\t1.30    \t3.20
{warn.format(n=2)}
 4       1000          1.11           3.10         1.16     \t       1.17        \t0.03   \t\t1.31    \t3.10
{DASH}
"""
    r = perftest.parse(text)
    assert r.warnings == [warn.format(n=1)] and r.error is None
    assert [(x.bytes, x.p99_us, x.p99_9_us) for x in r.lat_rows] == [(2, 1.30, 3.20), (4, 1.31, 3.10)]


@pytest.mark.parametrize("text", [
    "+-----------------------------------------------------------------------------------------+\n| NVIDIA-SMI 580.95.05 |\n",
    "# Avg bus bandwidth    : 22.9611\n",
    "hello: world\nfoo bar\n",
])
def test_foreign_text_is_a_parse_error(text):
    with pytest.raises(ParseError, match="^perftest: expected"):
        perftest.parse(text)


# ---- nccl-tests ---------------------------------------------------------------------------------------------

TABLE_HEAD = """\
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""


def _two_node(channels: str, rows: str, tail: str = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 11.4321\n#\n") -> str:
    return f"""# nccl-tests version 2.16.2 nccl-headers=22305 nccl-library=22305
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 1024 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   4711 on   gx-left device  0 [000f:01:00] NVIDIA GB10
#  Rank  1 Group  0 Pid   5822 on  gx-right device  0 [000f:01:00] NVIDIA GB10
gx-left:4711:4711 [0] NCCL INFO NCCL version 2.23.4+cuda12.8
gx-left:4711:4711 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.
gx-left:4711:4711 [0] NCCL INFO NET/Socket : Using [0]enP7s7:192.168.7.10<0>
gx-left:4711:4711 [0] NCCL INFO Using network Socket
{channels}#
{TABLE_HEAD}{rows}{tail}"""


SWEEP = """\
        1024           128     float    none      -1    31.20    0.03    0.02      0    30.80    0.03    0.02      0
  1073741824     134217728     float    none      -1    46620   23.03   23.01      0    46590   23.05   23.03      0
"""


def test_plugin_lines_say_socket_but_channels_say_ib_no_fallback():
    ch = ("gx-left:4711:4790 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
          "gx-left:4711:4790 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/1/GDRDMA\n")
    r = nccl.parse(_two_node(ch, SWEEP))
    assert r.transports == ["NET/IB"] and r.net_gdr is True and r.network == "Socket"
    assert (r.nccl_version, r.nccl_cuda, r.hosts) == ("2.23.4", "12.8", ["gx-left", "gx-right"])
    assert r.busbw_gbps == pytest.approx((23.01 + 23.03) / 2 * 8)  # the 1 GiB row, not the sweep's mean
    assert r.avg_busbw_gbps == pytest.approx(11.4321 * 8, abs=0.001)
    assert judge_nccl(r, Expect(), "gx-left") == []


def test_socket_channels_are_the_fallback():
    ch = ("gx-left:4711:4790 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n"
          "gx-left:4711:4790 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n")
    slow = "  1073741824     134217728     float    none      -1   310000    3.46    2.31      0   309000    3.47    2.32      0\n"
    r = nccl.parse(_two_node(ch, slow, tail="# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 2.315\n#\n"))
    assert r.transports == ["NET/Socket"] and r.net_gdr is False
    assert codes(judge_nccl(r, Expect(), "gx-left", hca="=rocep1s0f1")) == [(Code.NCCL_SOCKET, False), (Code.NCCL_BANDWIDTH, False)]


def test_no_channel_lines_across_nodes_is_a_warning_not_a_pass_of_the_transport():
    r = nccl.parse(_two_node("", SWEEP))
    assert r.transports == []
    assert codes(judge_nccl(r, Expect(), "gx-left")) == [(Code.NCCL_SOCKET, True)]


def test_cut_run_computes_nothing_in_place_of_the_average_and_says_it_was_cut():
    r = nccl.parse(_two_node("", SWEEP, tail=""))
    assert r.avg_busbw_gbps is None and not r.complete and len(r.rows) == 2
    [run, _] = judge_nccl(r, Expect(), "gx-left")
    assert run.code == Code.NCCL_RUN and "cut" in run.seen


def test_test_failure_line_is_the_error():
    text = _two_node("", "", tail="gx-left: Test NCCL failure common.cu:1279 'remote process exited or there was a network error'\n"
                                  " .. gx-left pid 4711: Test failure common.cu:1151\n")
    r = nccl.parse(text)
    assert r.error == "Test NCCL failure common.cu:1279 'remote process exited or there was a network error'"
    assert codes(judge_nccl(r, Expect(), "gx-left"))[0] == (Code.NCCL_RUN, False)


def test_debug_lines_between_rows_wrong_values_and_na_columns():
    rows = ("      262144         65536     float     sum      -1    88.10    2.98    5.58      0    87.95    2.98    5.59      0\n"
            "gx-left:4711:4795 [0] NCCL INFO comm 0x55d0c0 rank 0 nranks 2 cudaDev 0 busId f01000 - Init COMPLETE\n"
            "      524288        131072     float     sum      -1    120.4    4.35    8.16      3      N/A     N/A     N/A    N/A\n")
    r = nccl.parse(_two_node("", rows, tail="# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 6.8644\n"))
    assert len(r.rows) == 2 and r.rows[1].ip_busbw_gbps is None and r.rows[1].oop_wrong == "3"
    assert r.errors_found and r.out_of_bounds_ok is False
    assert r.busbw_gbps == pytest.approx(8.16 * 8)


def test_hash_marks_lost_in_markdown_and_old_rank_lines():
    text = """ nThread 1 nGpus 2 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
 Using devices
   Rank  0 Pid  31337 on   wkst-07 device  0 [0x3b] Tesla V100-PCIE-32GB
   Rank  1 Pid  31337 on   wkst-07 device  1 [0xd8] Tesla V100-PCIE-32GB

       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2   float     sum    11.62    0.00    0.00  0e+00    11.40    0.00    0.00  0e+00
     1048576        262144   float     sum    112.3    9.34    9.34  0e+00    111.9    9.37    9.37  0e+00
 Out of bounds values : 0 OK
 Avg bus bandwidth    : 4.67750
"""
    r = nccl.parse(text)
    assert [(k.rank, k.host, k.device, k.group) for k in r.ranks] == [(0, "wkst-07", 0, None), (1, "wkst-07", 1, None)]
    assert r.hosts == ["wkst-07"] and len(r.rows) == 2 and r.rows[1].root is None
    assert r.complete and r.busbw_gbps == pytest.approx(9.355 * 8)
    assert judge_nccl(r, Expect(min_nccl_busbw_gbps=50), "wkst-07") == []  # one host: no NET expected


def test_rows_after_a_cut_header_are_known_by_type_and_redop():
    text = ("     4194304       1048576     float     sum      -1    310.2   13.52   25.35      0    309.8   13.54   25.38      0\n"
            "     8388608       2097152     float     sum      -1    590.5   14.21   26.64      0    589.7   14.22   26.67      0\n"
            "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 25.998\n")
    r = nccl.parse(text)
    assert [x.size_bytes for x in r.rows] == [4194304, 8388608] and r.rows[0].root == -1
    assert r.busbw_gbps == pytest.approx((26.64 + 26.67) / 2 * 8)


@pytest.mark.parametrize(("line", "transport", "gdr"), [
    ("node01:5646:5657 [0] NCCL INFO Channel 00/0 : 1[7000] -> 0[b7000] [receive] via NET/UCX/0/GDRDMA comm 0x22fcfb0 nRanks 02",
     "NET/UCX", True),
    ("p5-3:88:120 [2] NCCL INFO Channel 01/1 : 4[0] -> 0[0] [receive] via NET/AWS Libfabric/7/GDRDMA/Shared", "NET/AWS Libfabric", True),
    ("ip-10-1-2-3:46:51 [0] NCCL INFO Channel 00 : 0[1e0] -> 1[1e0] [receive] via NET/Socket/0", "NET/Socket", False),
    ("old:12:12 [0] NCCL INFO Ring 00 : 0 -> 1 [send] via NET/IB/0", "NET/IB", False),
    ("h:1:2 [3] NCCL INFO Channel 14/0 : 11[3] -> 9[1] via P2P/CUMEM", "P2P", None),
    ("h:1:2 [3] NCCL INFO Channel 02/0 : 3[3] -> 4[4] via SHM/direct/direct", "SHM", None),
    ("h:1:2 [0] NCCL INFO Ring 01 : 0[0] -> 1[1] via direct shared memory", "SHM", None),
])
def test_transport_names_from_channel_lines(line, transport, gdr):
    r = nccl.parse(line + "\n")
    assert (r.transports, r.net_gdr) == ([transport], gdr)


def test_mpirun_tagged_output_and_version_codes():
    text = "\n".join(f"[1,0]<stdout>:{line}" for line in _two_node("", SWEEP).splitlines()).replace("22305", "2708")
    r = nccl.parse(text)
    assert r.nccl_version == "2.23.4"  # the NCCL version line wins over nccl-library=2708
    assert nccl.parse("# nccl-tests version 2.0.0 nccl-headers=2708 nccl-library=2708\n# nThread 1\n").nccl_version == "2.7.8"


def test_no_ib_device_line():
    r = nccl.parse("h:1:1 [0] NCCL INFO NET/IB : No device found.\nh:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.5<0>\n")
    assert r.net_ib_devices == [] and r.transports == []


@pytest.mark.parametrize("text", [
    " 65536      20000            111.62             111.61             0.212877\n",
    "Status: active\nTo Action From\n",
    "   8   2   float\n",
])
def test_foreign_text_is_a_nccl_parse_error(text):
    with pytest.raises(ParseError, match="^nccl_tests: expected"):
        nccl.parse(text)


# ---- variants of newer tool releases ------------------------------------------------------------------------

def test_perftest_mib_per_sec_header_of_newer_perftest():
    # perftest 23.x+ labels its binary megabytes MiB/sec (RESULT_FMT); the value is the same 2^20-byte unit as MB/sec
    r = perftest.parse(HEADER_MB + f"""{DASH}
 #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]
 65536      5000             11030.78            11030.45\t\t     0.176487
 8388608    5000             11790.10            11790.02\t\t     0.001474
{DASH}
""")
    assert (r.unit, len(r.bw_rows), r.bw_bytes, r.complete) == ("MiB/sec", 2, 8388608, True)
    assert r.bw_average_gbps == pytest.approx(11790.02 * 1048576 * 8 / 1e9, abs=0.001)
    assert r.bw_peak_gbps == pytest.approx(11790.10 * 1048576 * 8 / 1e9, abs=0.001)
    assert r.error is None


TS_TABLE_HEAD = """\
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong           timestamp
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       %Y-%m-%d %H:%M:%S
"""

PER_ITER_HEAD = """\
#                                                   out-of-place (+ per-iteration)                                in-place (+ per-iteration)
#       size         count      type   redop    root     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)            (us)     (us)     (us)      (%)
"""


def test_nccl_timestamp_column_rows_are_read():
    rows = ("        1024           256     float     sum      -1    31.20    0.03    0.03      0    30.80    0.03    0.03      0 2025-11-02 09:14:03\n"
            "  1073741824     268435456     float     sum      -1    46620   23.03   23.01      0    46590   23.05   23.03      0 2025-11-02 09:14:09\n")
    r = nccl.parse(_two_node("", "", tail="").replace(TABLE_HEAD, TS_TABLE_HEAD) + rows + "# Avg bus bandwidth    : 11.52 \n")
    assert len(r.rows) == 2 and r.complete
    assert (r.rows[1].oop_busbw_gbps, r.rows[1].ip_busbw_gbps, r.rows[1].ip_wrong) == (184.08, 184.24, "0")
    assert r.busbw_gbps == pytest.approx((23.01 + 23.03) / 2 * 8)
    # the same rows after a header cut off (tail -n): known by type and redop
    cut = nccl.parse(rows + "# Avg bus bandwidth    : 11.52 \n")
    assert len(cut.rows) == 2 and cut.busbw_gbps == r.busbw_gbps


def test_nccl_per_iteration_columns_and_cputime_header():
    row = ("  1073741824     268435456     float     sum      -1    46620   23.03   23.01      0    46500    46800    46790     0.12"
           "    46590   23.05   23.03      0    46480    46770    46760     0.11\n")
    r = nccl.parse(_two_node("", "", tail="").replace(TABLE_HEAD, PER_ITER_HEAD) + row + "# Avg bus bandwidth    : 23.02 \n")
    assert len(r.rows) == 1
    got = r.rows[0]
    assert (got.oop_time_us, got.oop_busbw_gbps, got.oop_wrong, got.ip_time_us, got.ip_busbw_gbps, got.ip_wrong) == \
        (46620.0, 184.08, "0", 46590.0, 184.24, "0")
    assert nccl.parse(row).rows[0].ip_busbw_gbps == 184.24  # header cut: 21 words known by type and redop
    cpu = _two_node("", SWEEP).replace(" time ", " cputime ")
    r = nccl.parse(cpu)
    assert [x.size_bytes for x in r.rows] == [1024, 1073741824] and r.busbw_gbps == pytest.approx((23.01 + 23.03) / 2 * 8)


def test_perftest_mtu_notice_is_a_warning_not_a_failure():
    # `-m 4096` on a RoCE port whose active MTU is 1024 (netdev MTU 1500): perftest says so on stdout and runs on
    text = ("Requested mtu is higher than active mtu \nChanging to active mtu - 3\n" + HEADER_MB.replace("4096[B]", "1024[B]")
            + f""" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      5000             92.10              92.05\t\t     0.175571
{DASH}
""")
    r = perftest.parse(text)
    assert (r.error, r.errors, r.bw_average_gbps, r.mtu_bytes) == (None, [], 92.05, 1024)
    assert r.warnings == ["Requested mtu is higher than active mtu", "Changing to active mtu - 3"]
    failed = perftest.parse("Requested mtu is higher than active mtu \nChanging to active mtu - 3\n Failed to create QP.\n")
    assert failed.error == "Failed to create QP."


def test_perftest_warning_cut_to_its_label_is_read_not_crashed_on():
    # A capture cut right after " WARNING:" (the robustness test's random cut found it: an AttributeError, not facts):
    # the table still reads; a warning with no words left is not a warning to report.
    text = (" WARNING:\n" + HEADER_MB + """ #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      5000             92.10              92.05\t\t     0.175571
""")
    r = perftest.parse(text)
    assert (r.bw_average_gbps, r.warnings) == (92.05, [])


def test_perftest_report_both_side_tables_are_not_averaged_into_the_bidirectional_figure():
    head = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
    text = (HEADER_MB.replace("RDMA_Write BW Test", "RDMA_Write Bidirectional BW Test") + head
            + f" 65536      10000            184.20             184.10\t\t     0.351143\n{DASH}\n"
            + f"{DASH}\n\n Local results: \n{DASH}\n{head} 65536      5000             92.10              92.05\t\t     0.175571\n{DASH}\n"
            + f"\n Remote results: \n{DASH}\n{head} 65536      5000             92.10              92.05\t\t     0.175571\n{DASH}\n")
    r = perftest.parse(text)
    assert r.bidirectional and len(r.bw_rows) == 1 and r.bw_average_gbps == 184.1 and r.error is None


# ---- audit: more failure lines, terse output, old and split nccl-tests runs ------------------------------------

LAT_HEAD = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
            "   99% percentile[usec]   99.9% percentile[usec] \n")


@pytest.mark.parametrize(("lines", "first"), [
    # a server whose client vanished: the function name comes first (perftest_communication.c)
    ("ethernet_read_keys: Couldn't read remote address\n Unable to read to socket/rdma_cm\n"
     " Failed to exchange data between server and clients\n", "ethernet_read_keys: Couldn't read remote address"),
    ("poll CQ failed 1\n Failed to complete run_iter_bw function successfully\n", "poll CQ failed 1"),
    ("Bad wc status -- 5 -- 0 \n", "Bad wc status -- 5 -- 0"),
    ("Test exited with Error\n", "Test exited with Error"),  # ib_*_lat mains
    ("Error occurred while running infinitely! aborting ...\n", "Error occurred while running infinitely! aborting ..."),
    ("Received 10 times ADDR_ERROR\n", "Received 10 times ADDR_ERROR"),  # rdma_cm could not resolve the peer
    ("\n Found Incompatibility issue with GID types.\n Please Try to use a different IP version.\n\n",
     "Found Incompatibility issue with GID types."),
    ("Function ibv_post_send failed\n", "Function ibv_post_send failed"),
    ("VALIDATION: FAILED (CLIENT) - 12 error(s), first at QP 0, Chunk 3, Offset 64 (expected 0xa5, got 0x00)\n",
     "VALIDATION: FAILED (CLIENT) - 12 error(s), first at QP 0, Chunk 3, Offset 64 (expected 0xa5, got 0x00)"),
])
def test_perftest_more_failure_lines_after_the_table_header(lines, first):
    text = HEADER_MB.replace("RDMA_Write BW Test", "RDMA_Write Latency Test") + LAT_HEAD + lines
    r = perftest.parse(text)
    assert r.error == first and r.lat_rows == []  # was "no result rows": the telling line was not known


def test_perftest_libibverbs_driver_warnings_are_warnings_and_the_banner_still_says_waiting():
    text = ("libibverbs: Warning: couldn't load driver 'libfoo-rdmav34.so': libfoo-rdmav34.so: cannot open shared object file\n"
            "\n************************************\n* Waiting for client to connect... *\n************************************\n")
    r = perftest.parse(text)
    assert r.errors == [] and r.waiting and "banner" in r.error
    assert r.warnings == ["libibverbs: Warning: couldn't load driver 'libfoo-rdmav34.so': libfoo-rdmav34.so: cannot open "
                          "shared object file"]


def test_perftest_output_bandwidth_prints_the_figure_alone():
    # --output=bandwidth: no banner, no header, no table; one "%lf" a size, in the unit the command line asked for
    r = perftest.parse("user@gx-a:~$ ib_write_bw -d rocep1s0f1 -x 3 -D 10 --report_gbits --output=bandwidth 10.9.0.2\n"
                       "92.481736\n")
    assert (r.bw_average_gbps, r.bw_bytes, r.unit, r.bw_peak_gbps, r.error) == (92.482, 65536, "Gb/sec", None, None)
    sweep = perftest.parse("$ ib_send_bw -d mlx5_1 -a --output=bandwidth 10.9.0.2\n0.842117\n1.690304\n11020.450000\n")
    assert [x.bytes for x in sweep.bw_rows] == [2, 4, 8] and sweep.unit == "MB/sec"
    assert sweep.bw_average_gbps == pytest.approx(11020.45 * 1048576 * 8 / 1e9, abs=0.001)
    sized = perftest.parse("$ ib_write_bw -s 1048576 --report_gbits --output=bandwidth peer\n97.100000\n")
    assert sized.bw_bytes == 1048576
    lat = perftest.parse("$ ib_write_lat -d mlx5_1 --output=latency 10.9.0.2\n1.870000\n")
    assert [(x.bytes, x.t_avg_us, x.t_min_us) for x in lat.lat_rows] == [(2, 1.87, None)] and lat.error is None
    with pytest.raises(ParseError):  # without the command line a bare number says nothing
        perftest.parse("92.481736\n")


def test_perftest_multicast_test_name_and_infinite_write_server():
    r = perftest.parse(HEADER_MB.replace("RDMA_Write BW Test", "Send BW Multicast Test")
                       + " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
                       + " 4096       1000             9.10               9.05\t\t     0.276184\n")
    assert r.test == "Send BW Multicast Test" and r.bw_average_gbps == 9.05
    # the write server of a --run_infinitely run prints no rows, only that the client left
    server = perftest.parse(HEADER_MB + " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
                            + " Client closed connection\n" + DASH + "\n")
    assert server.bw_rows == [] and "server side of an infinite run" in server.error


def test_nccl_wrong_counts_of_a_million_and_more_print_in_exponent_form():
    # "#wrong" is printed "%6g": 268435456 wrong elements read "2.68435e+08"
    row = ("  1073741824     268435456     float     sum      -1    46620   23.03   23.03  2.68435e+08"
           "    46590   23.05   23.05  2.68435e+08\n")
    r = nccl.parse(_two_node("", row, tail="# Out of bounds values : 536870912 FAILED\n# Avg bus bandwidth    : 23.04 \n"))
    assert r.errors_found and r.out_of_bounds_ok is False and r.rows[0].oop_wrong == "2.68435e+08"
    # the old "error" column is a deviation, not a count, however it is printed
    old = nccl.parse("#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
                     "     1048576        262144   float     sum    112.3    9.34    9.34  1e+00    111.9    9.37    9.37  5e-07\n")
    assert not old.errors_found and len(old.rows) == 1


def test_nccl_tests_before_2_0_rank_lines_without_pid_and_time_in_ms():
    text = """nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
# Using devices
#   Rank  0 on  rig-07 device  0 [0x04] Tesla P100-PCIE-16GB
#   Rank  1 on  rig-07 device  1 [0x06] Tesla P100-PCIE-16GB

#                                                 out-of-place                    in-place
#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res
           8             2   float     sum    0.041   0.00   0.00    0e+00    0.040   0.00   0.00    0e+00
   134217728      33554432   float     sum   12.512  10.73  10.73    0e+00   12.498  10.74  10.74    0e+00
 Out of bounds values : 0 OK
 Avg bus bandwidth    : 5.36
"""
    r = nccl.parse(text)
    assert [(k.rank, k.host, k.pid, k.device, k.bus_id) for k in r.ranks] == [(0, "rig-07", None, 0, "0x04"),
                                                                              (1, "rig-07", None, 1, "0x06")]
    assert [(x.size_bytes, x.redop, x.oop_time_us, x.ip_time_us) for x in r.rows] == [(8, "sum", 41.0, 40.0),
                                                                                       (134217728, "sum", 12512.0, 12498.0)]
    assert r.busbw_gbps == pytest.approx((10.73 + 10.74) / 2 * 8) and r.complete and not r.errors_found


def test_nccl_each_process_running_its_own_test_is_a_failed_multi_node_run():
    # nccl-tests built without MPI=1 under mpirun: every process is rank 0 of its own one-node run, headers interleaved
    def head(host: str, pid: int) -> str:
        return ("# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1"
                f" validation: 1 graph: 0\n#\n# Using devices\n#  Rank  0 Group  0 Pid {pid:6d} on {host:>10} device  0"
                " [000f:01:00] NVIDIA GB10\n")
    rows = ("  1073741824     268435456     float     sum      -1   4100.1  261.88    0.00      0   4090.2  262.52    0.00      0\n"
            "  1073741824     268435456     float     sum      -1   4110.3  261.23    0.00      0   4095.0  262.21    0.00      0\n")
    foot = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0 \n#\n"
    r = nccl.parse(head("gx-left", 4711) + head("gx-right", 5822) + "#\n" + TABLE_HEAD + rows + foot + foot)
    assert r.error == "every process ran its own test: rank 0 printed on gx-left, gx-right (nccl-tests built without MPI=1?)"
    assert codes(judge_nccl(r, Expect(), "gx-left"))[0] == (Code.NCCL_RUN, False)
    # two runs one after the other on the same pair of nodes: rank 0 is on the same host both times
    twice = _two_node("", SWEEP) + _two_node("", SWEEP)
    assert nccl.parse(twice).error is None


def test_nccl_mpiexec_rank_labels_and_test_timeout_line():
    text = "\n".join(f"[{n % 2}] {line}" for n, line in enumerate(_two_node("", SWEEP).splitlines()))
    r = nccl.parse(text)
    assert len(r.rows) == 2 and r.hosts == ["gx-left", "gx-right"] and r.complete
    cut = nccl.parse(_two_node("", "", tail="gx-left: Test timeout (300s) common.cu:521\n"
                                            " .. gx-left pid 4711: Test failure common.cu:1151\n"))
    assert cut.error == "Test timeout (300s) common.cu:521"

