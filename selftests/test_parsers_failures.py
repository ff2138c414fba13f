"""Failure outputs: what each tool prints when something is wrong (no permission, no device, no driver, no daemon, a
proxy in the way, a crashed peer), in the tools' own wording (from their sources), with made-up names and values.

A failure is read as that failure: the fields a parser has for errors, or a ParseError whose message shows what was
printed (the suite reports it as "could not check"); never as a healthy or empty-but-valid result ('0 GPUs', 'no
processes', 'no packages') unless that is what the tool itself says.
"""

import re

import pytest

from gb10check.checks import host
from gb10check.facts import KINDS, ParseError, parse
from gb10check.remedies import Code

# ---- any kind: the shell, sudo or ssh answered instead of the tool -------------------------------------------------

NOT_THE_TOOL = [
    "sudo: a terminal is required to read the password; either use the -S option to read from standard input or "
    "configure an askpass helper\nsudo: a password is required\n",
    "ssh: connect to host spark-b port 22: No route to host\n",
    "lab@spark-b: Permission denied (publickey).\n",
    "bash: line 1: some-tool: command not found\n",
]


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("text", NOT_THE_TOOL)
def test_shell_sudo_or_ssh_failure_is_never_a_fact(kind, text):
    with pytest.raises(ParseError, match=rf"^{kind}: expected "):
        parse(kind, text)


# ---- nvidia-smi --query-gpu: its failure lines are never values -------------------------------------------------

SMI_FAILURES = [
    "No devices were found\n",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
    "driver is installed and running.\n\n",
    "Failed to initialize NVML: Unknown Error\n",  # a container whose device cgroup lost the GPU
    "Failed to initialize NVML: Insufficient Permissions\n",
    "Unable to determine the device handle for GPU0000:0F:01.0: Unknown Error\n",
    "Unable to determine the device handle for gpu 0000000F:01:00.0: GPU is lost.  Reboot the system to recover this GPU\n",
    "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA Display Driver is "
    "properly installed and present in your system.\nPlease also try adding directory that contains libnvidia-ml.so to "
    "your system PATH.\n",
]


@pytest.mark.parametrize("text", SMI_FAILURES)
def test_query_noheader_failure_line_is_not_a_value(text):
    # A one-field noheader query (gather.DRIVER_QUERY, the command line kept) used to read the failure as the value.
    first = text.splitlines()[0][:40]
    for given in ("$ nvidia-smi --query-gpu=name --format=csv,noheader\n" + text, "$ nvidia-smi --query-gpu=name --format=csv\n" + text):
        with pytest.raises(ParseError, match=r"^nvidia_smi_query: expected .*got ['\"]" + re.escape(first)):
            parse("nvidia_smi_query", given)
    from gb10check.facts.nvidia import parse_query
    with pytest.raises(ParseError):
        parse_query(text, ["driver_version"])


def test_query_gpu_lost_between_rows_is_not_one_gpu_fewer():
    text = ("index, name, temperature.gpu\n0, NVIDIA GB10, 41\n"
            "Unable to determine the device handle for gpu 0000000F:02:00.0: GPU is lost.  Reboot the system to recover this GPU\n")
    with pytest.raises(ParseError, match="could not read the GPU"):
        parse("nvidia_smi_query", text)


def test_query_gpu_requires_reset_in_every_field_is_a_parse_error():
    text = "name, memory.used [MiB], temperature.gpu\n[GPU requires reset], [GPU requires reset], [GPU requires reset]\n"
    with pytest.raises(ParseError, match=r"\[GPU requires reset\] in place of its values"):
        parse("nvidia_smi_query", text)
    # one field a healthy GPU cannot report stays None (GB10's memory.total is [N/A])
    rows = parse("nvidia_smi_query", "name, memory.total [MiB], fan.speed [%]\nNVIDIA GB10, [N/A], [Unknown Error]\n")
    assert rows == [{"name": "NVIDIA GB10", "memory_total_gib": None, "fan_speed_pct": None}]


PROC_VERSION = ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.95.05  Release Build  (builder@build-host)  "
                "Tue Sep 23 09:00:00 UTC 2025\nGCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n")


@pytest.mark.parametrize("smi", ["No devices were found\n", "Failed to initialize NVML: Unknown Error\n"])
def test_driver_judge_reads_nvidia_smi_failure_as_no_driver(smi):
    [f] = host.judge_driver("spark-a", PROC_VERSION, smi)
    assert f.code == Code.NO_DRIVER and smi.strip() in f.text
    assert host.installed_driver(smi) is None
    assert host.judge_driver("spark-a", PROC_VERSION, "580.95.05\n") == []


# ---- nvidia-smi table --------------------------------------------------------------------------------------------

TABLE_HEAD = """\
Mon Jan  5 10:00:00 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
"""
GPU_OK = """\
|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                  N/A |
| N/A   41C    P0             12W /  N/A  | Not Supported          |      0%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
"""
# A GPU that fell off the bus: nvidia-smi still prints its row, with ERR! where it could not read a field.
GPU_ERR = """\
|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                 ERR! |
|ERR!  ERR!   ERR!            ERR! / ERR! | Not Supported          |    ERR!      Default |
|                                         |                        |                 ERR! |
+-----------------------------------------+------------------------+----------------------+
"""
PROCS_HEAD = """
+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
"""
NO_PROCS = """\
|  No running processes found                                                             |
+-----------------------------------------------------------------------------------------+
"""


def test_table_err_fields_are_errors_not_readings():
    smi = parse("nvidia_smi", TABLE_HEAD + GPU_ERR + PROCS_HEAD + NO_PROCS)
    [gpu] = smi.gpus
    assert gpu.temperature_c is None and gpu.power_draw_w is None and gpu.gpu_util_pct is None
    assert smi.errors == ["GPU 0 (0000000F:01:00.0): ERR! in ecc, fan, perf, MIG mode"]
    assert parse("nvidia_smi", TABLE_HEAD + GPU_OK + PROCS_HEAD + NO_PROCS).errors == []


def test_table_processes_cut_after_their_header_are_not_none_running():
    cut = parse("nvidia_smi", TABLE_HEAD + GPU_OK + PROCS_HEAD)
    assert cut.processes == [] and cut.processes_listed is False
    whole = parse("nvidia_smi", TABLE_HEAD + GPU_OK + PROCS_HEAD + NO_PROCS)
    assert whole.processes == [] and whole.processes_listed is True
    one = "|    0   N/A  N/A            4242      C   VLLM::EngineCore                          N/A      |\n"
    cut_in_rows = parse("nvidia_smi", TABLE_HEAD + GPU_OK + PROCS_HEAD + one)
    # the rows read are real, but the list is not known to be whole: not listed (a stale process may follow)
    assert [p.pid for p in cut_in_rows.processes] == [4242] and cut_in_rows.processes_listed is False


def test_table_failure_after_a_timestamp_is_named():
    with pytest.raises(ParseError, match="Failed to initialize NVML: Unknown Error"):
        parse("nvidia_smi", "Mon Jan  5 10:00:00 2026\nFailed to initialize NVML: Unknown Error\n")


# ---- vLLM API: error answers that are not vLLM's JSON ------------------------------------------------------------

NGINX_502 = """\
<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx/1.24.0</center>
</body>
</html>
"""
CURL_I_502 = ("HTTP/1.1 502 Bad Gateway\nServer: nginx/1.24.0\nDate: Mon, 05 Jan 2026 10:00:00 GMT\nContent-Type: text/html\n"
              "Content-Length: 157\nConnection: keep-alive\n\n" + NGINX_502)
# Starlette's answer to an unhandled exception in vLLM's server: a plain-text 500.
CURL_I_500 = ("HTTP/1.1 500 Internal Server Error\ndate: Mon, 05 Jan 2026 10:00:00 GMT\nserver: uvicorn\ncontent-length: 21\n"
              "content-type: text/plain; charset=utf-8\n\nInternal Server Error")
ENVOY_503 = "upstream connect error or disconnect/reset before headers. reset reason: connection failure"
CURL_FAILURES = ["curl: (7) Failed to connect to 10.0.0.1 port 8000 after 0 ms: Couldn't connect to server\n",
                 "curl: (7) Failed to connect to localhost port 8000: Connection refused\n",
                 "curl: (52) Empty reply from server\n", "curl: (56) Recv failure: Connection reset by peer\n",
                 "curl: (28) Operation timed out after 30001 milliseconds with 0 bytes received\n", ""]


def test_error_proxy_html_page_is_the_proxys_error():
    for text, server in ((NGINX_502, "nginx/1.24.0"), (CURL_I_502, "nginx/1.24.0")):
        e = parse("vllm_error", text)
        assert (e.envelope, e.message, e.status, e.server, e.vllm, e.code) == ("html", "502 Bad Gateway", 502, server, False, None)


def test_error_plain_text_bodies():
    e = parse("vllm_error", CURL_I_500)
    assert (e.envelope, e.message, e.status, e.server, e.vllm) == ("text", "Internal Server Error", 500, "uvicorn", True)
    e = parse("vllm_error", ENVOY_503)
    assert (e.envelope, e.message, e.status, e.vllm) == ("text", ENVOY_503, None, False)


@pytest.mark.parametrize("text", CURL_FAILURES)
@pytest.mark.parametrize("kind", ["vllm_models", "vllm_chat", "vllm_sse", "vllm_error"])
def test_no_http_answer_is_a_parse_error(kind, text):
    with pytest.raises(ParseError, match=rf"^{kind}: expected "):
        parse(kind, text)


@pytest.mark.parametrize("kind", ["vllm_models", "vllm_chat"])
def test_models_and_chat_name_the_error_page(kind):
    with pytest.raises(ParseError, match=r"this is an error answer: 502 Bad Gateway"):
        parse(kind, CURL_I_502)


def test_sse_request_refused_before_streaming_is_the_streams_error():
    # stream=true with a bad parameter: vLLM answers 400 with its JSON envelope, no event at all
    body = ('{"error":{"message":"max_tokens must be at least 1, got 0.","type":"BadRequestError","param":"max_tokens",'
            '"code":400}}')
    s = parse("vllm_sse", body)
    assert (s.chunks, s.done, s.content, s.error) == (0, False, "", "max_tokens must be at least 1, got 0.")
    s = parse("vllm_sse", CURL_I_502)
    assert (s.chunks, s.done, s.error) == (0, False, "502 Bad Gateway")
    s = parse("vllm_sse", CURL_I_500)
    assert s.error == "500 Internal Server Error"


def test_chat_given_a_stream_is_not_an_empty_answer():
    chunk = ('data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1767600000,"model":"spark-model",'
             '"choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]}\n\n')
    with pytest.raises(ParseError, match="read it as vllm_sse"):
        parse("vllm_chat", chunk + "data: [DONE]\n\n")
    assert parse("vllm_sse", chunk + "data: [DONE]\n\n").content == "Hello"


# ---- docker: the daemon's error after docker inspect's empty array ------------------------------------------------

@pytest.mark.parametrize("kind", ["docker_inspect", "docker_health", "docker_image_inspect"])
def test_inspect_missing_object_message_shows_dockers_error(kind):
    with pytest.raises(ParseError, match=r"got '\[\]' \.\.\. 'Error: No such object: vllm-head'$"):
        parse(kind, "[]\nError: No such object: vllm-head\n")


# ---- dpkg-query: a pattern that matches nothing ------------------------------------------------------------------

def test_dpkg_query_no_packages_found_is_no_packages():
    # dpkg-query's own words for each pattern no package matches (stderr, exit 1), two lines with the same prefix
    none = ("dpkg-query: no packages found matching nvidia-driver-*\n"
            "dpkg-query: no packages found matching libnvidia-compute-*\n")
    assert parse("dpkg_query", none) == []
    some = "nvidia-driver-580-open hold ok installed\ndpkg-query: no packages found matching libnvidia-compute-*\n"
    assert [(p.package, p.held) for p in parse("dpkg_query", some)] == [("nvidia-driver-580-open", True)]
    with pytest.raises(ParseError):
        parse("dpkg_query", "dpkg-query: error: --show needs at least one package name argument\n")


# ---- ray status ----------------------------------------------------------------------------------------------------

def test_ray_status_cut_after_its_header_is_not_zero_nodes():
    with pytest.raises(ParseError, match="Node status"):
        parse("ray_status", "======== Autoscaler status: 2026-01-05 10:00:00.123456 ========\n")


@pytest.mark.parametrize("text", [
    "ConnectionError: Could not find any running Ray instance. Please specify the one to connect to by setting "
    "`--address` flag or `RAY_ADDRESS` environment variable.\n",
    "2026-01-05 10:00:00,000\tINFO worker.py:1 -- Connecting to existing Ray cluster at address: 10.0.0.1:6379...\n"
    "ConnectionError: ray client connection timeout\n",
])
def test_ray_not_running_is_a_parse_error(text):
    for kind in ("ray_status", "ray_nodes"):
        with pytest.raises(ParseError, match=rf"^{kind}: expected .*ConnectionError"):
            parse(kind, text)


# ---- nccl-tests: a crashed rank -----------------------------------------------------------------------------------

def test_nccl_segfault_of_a_rank_is_the_runs_error():
    text = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   2101 on    spark-a device  0 [0x01] NVIDIA GB10
#  Rank  1 Group  0 Pid   2202 on    spark-b device  0 [0x01] NVIDIA GB10
[spark-b:02202] *** Process received signal ***
[spark-b:02202] Signal: Segmentation fault (11)
[spark-b:02202] Signal code: Address not mapped (1)
[spark-b:02202] Failing at address: 0x18
[spark-b:02202] *** End of error message ***
--------------------------------------------------------------------------
mpirun noticed that process rank 1 with PID 0 on node spark-b exited on signal 11 (Segmentation fault).
--------------------------------------------------------------------------
"""
    t = parse("nccl_tests", text)
    assert t.error == "Signal: Segmentation fault (11)" and not t.complete and t.rows == []
    only_mpirun = text.replace("[spark-b:02202] Signal: Segmentation fault (11)\n", "")
    assert parse("nccl_tests", only_mpirun).error.startswith("mpirun noticed that process rank 1")


# ---- nmcli: a profile nmcli could not show -----------------------------------------------------------------------

def test_nmcli_profile_error_is_kept():
    text = ("-- profile 0b1c2d3e-0000-4000-8000-000000000001 --\ndevice:enp1s0f0np0\n"
            "Error: unknown connection '0b1c2d3e-0000-4000-8000-000000000001'.\n"
            "-- profile 0b1c2d3e-0000-4000-8000-000000000002 --\ndevice:\nconnection.id:qsfp-b\n"
            "connection.type:802-3-ethernet\nconnection.interface-name:enp1s0f1np1\nconnection.autoconnect:no\nipv4.method:manual\n")
    gone, ok = parse("nmcli_profiles", text).profiles
    assert gone.error == "Error: unknown connection '0b1c2d3e-0000-4000-8000-000000000001'." and gone.ipv4_method is None
    assert ok.error is None and ok.ipv4_method == "manual"
