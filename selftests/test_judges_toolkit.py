"""The NVIDIA Container Toolkit's judges (gb10check/checks/toolkit.py) on our captures of the simulated pair's outputs
(the nvidia-ctk stand-in and the files the sim writes, in the real tools' formats) and on texts changed from them: the
toolkit advisories by version and CDI mode, the CDI spec's driver against the loaded one, and the parity with rank 0."""

import pytest

from gb10check.advisories import by_id
from gb10check.checks import toolkit
from gb10check.facts import ParseError, parse
from gb10check.remedies import Code

from .conftest import read_capture

VERSION = read_capture("ours/toolkit/sim-nvidia-ctk-version.txt")
SPECS = read_capture("ours/toolkit/sim-cdi-specs-rank0.txt")
STALE = read_capture("ours/toolkit/sim-cdi-specs-stale-rank1.txt")
AUTO = read_capture("ours/toolkit/sim-runtime-config-rank0.txt")
CDI = read_capture("ours/toolkit/sim-runtime-config-cdi-rank1.txt")
LOADED = "580.173.02"


def version(v: str):
    return parse("nvidia_ctk_version", VERSION.replace("version 1.18.1", f"version {v}"))


def config(text: str = AUTO):
    return parse("nvidia_runtime_config", text)


# ---- known-bad releases ---------------------------------------------------------------------------------------------

def test_healthy_release_is_not_affected():
    assert toolkit.judge_toolkit_advisories("n1", parse("nvidia_ctk_version", VERSION), config()) == []
    assert toolkit.judge_toolkit_advisories("n1", parse("nvidia_ctk_version", VERSION), config(CDI)) == []


def test_1_19_1_fails_in_any_mode_and_its_cdi_freeze_only_with_cdi():
    a, cdi = by_id("toolkit-1.19.1-cuda-init"), by_id("toolkit-1.19.1-cdi-freeze")
    [f] = toolkit.judge_toolkit_advisories("n1", version("1.19.1"), config())
    assert f.code == Code.KNOWN_BAD_VERSION and not f.warning and f.params["advisory"] == a.id
    assert f.text.startswith(f"[known-bad-version] n1: saw nvidia-ctk 1.19.1 [{a.id}: after the upgrade from 1.19.0")
    assert "fix: install toolkit 1.19.0 on every node" in f.text and a.source in f.text
    found = toolkit.judge_toolkit_advisories("n1", version("1.19.1"), config(CDI))
    assert [x.params["advisory"] for x in found] == [cdi.id, a.id]
    assert found[0].seen.startswith("nvidia-ctk 1.19.1 with CDI (runtime mode cdi, docker's CDI feature docker's default")
    assert "issues/1910" in found[0].text and "mode = \"legacy\"" in found[0].text


@pytest.mark.parametrize("v", ["1.19.0", "1.19.2", "1.18.1", "1.20.0"])
def test_the_boundaries(v):
    assert toolkit.judge_toolkit_advisories("n1", version(v), config(CDI)) == []


def test_docker_cdi_feature_counts_as_cdi():
    text = AUTO.replace("-- /etc/docker/daemon.json: absent --", '-- /etc/docker/daemon.json --\n{"features": {"cdi": true}}')
    found = toolkit.judge_toolkit_advisories("n1", version("1.19.1"), config(text))
    assert {f.params["advisory"] for f in found} == {"toolkit-1.19.1-cdi-freeze", "toolkit-1.19.1-cuda-init"}


# ---- the CDI spec against the loaded driver -------------------------------------------------------------------------

def test_fresh_spec_passes():
    assert toolkit.judge_cdi_spec("n1", parse("cdi_spec", SPECS), LOADED, config()) == []


def test_spec_left_from_the_previous_driver_fails_with_the_generate_command():
    [f] = toolkit.judge_cdi_spec("n2", parse("cdi_spec", STALE), LOADED, config())
    assert f.code == Code.CDI_SPEC_STALE and not f.warning
    assert f.text.startswith("[cdi-spec-stale] n2: saw /etc/cdi/nvidia.yaml generated for driver 580.126.09 "
                             "(/usr/lib/aarch64-linux-gnu/libEGL_nvidia.so.580.126.09); expected the CDI spec of the loaded "
                             "driver 580.173.02\n  fix: generate the CDI spec again for the loaded driver on n2: sudo "
                             "nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml")


def test_a_second_spec_left_in_var_run_is_judged_too():
    body = STALE.split("-- /etc/cdi/nvidia.yaml --\n", 1)[1].split("-- /var/run/cdi/nvidia.yaml: absent --")[0]
    text = SPECS.replace("-- /var/run/cdi/nvidia.yaml: absent --", "-- /var/run/cdi/nvidia.yaml --\n" + body)
    [f] = toolkit.judge_cdi_spec("n1", parse("cdi_spec", text), LOADED, config())
    assert f.code == Code.CDI_SPEC_STALE and f.params["path"] == "/var/run/cdi/nvidia.yaml"
    assert "--output=/var/run/cdi/nvidia.yaml" in f.text


def test_no_spec_fails_only_where_containers_get_the_gpu_through_cdi():
    none = parse("cdi_spec", "-- /etc/cdi/nvidia.yaml: absent --\n-- /var/run/cdi/nvidia.yaml: absent --\n")
    assert none == [] and toolkit.judge_cdi_spec("n1", none, LOADED, config()) == []
    [f] = toolkit.judge_cdi_spec("n1", none, LOADED, config(CDI))
    assert f.code == Code.CDI_SPEC_MISSING and "[cdi-spec-missing] n1: saw no /etc/cdi/nvidia.yaml" in f.text
    assert "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml" in f.text


def test_a_spec_naming_no_driver_cannot_be_judged():
    text = SPECS.replace(f".so.{LOADED}", ".so.1").replace(f"--host-driver-version={LOADED}", "--host-driver-version")
    [f] = toolkit.judge_cdi_spec("n1", parse("cdi_spec", text), LOADED, config())
    assert f.code == Code.UNKNOWN_NEED and "names no driver version" in f.seen


def test_the_hook_argument_alone_names_the_driver():
    [spec] = parse("cdi_spec", STALE.replace(".so.580.126.09", ".so.1"))
    assert spec.driver_versions == ["580.126.09"] and spec.libraries == {"580.126.09": "--host-driver-version=580.126.09"}


@pytest.mark.parametrize("text", [
    "-- /etc/cdi/nvidia.yaml --\nnot: [a spec\n-- /var/run/cdi/nvidia.yaml: absent --\n",  # not YAML
    "-- /etc/cdi/nvidia.yaml --\nkind: nvidia.com/gpu\n-- /var/run/cdi/nvidia.yaml: absent --\n",  # no cdiVersion
    "-- /etc/cdi/nvidia.yaml: absent --\n",  # a section lost: a cut output
    "cat: /etc/cdi/nvidia.yaml: Permission denied\n",
])
def test_garbled_specs_are_refused(text):
    with pytest.raises(ParseError):
        parse("cdi_spec", text)


# ---- the same toolkit on every node ---------------------------------------------------------------------------------

def test_toolkit_same_as_head():
    same = toolkit.toolkit_identity(parse("nvidia_ctk_version", VERSION), config())
    assert toolkit.judge_toolkit_same("n2", "n1", same, same) == []
    [f] = toolkit.judge_toolkit_same("n2", "n1", toolkit.toolkit_identity(parse("nvidia_ctk_version", VERSION), config(CDI)), same)
    assert f.code == Code.TOOLKIT_DIFFERS
    assert f.text.startswith("[toolkit-differs] n2: saw runtime mode (config.toml) 'cdi'; expected 'auto' as on n1\n  fix: run "
                             "the same NVIDIA Container Toolkit, configured the same way, on every node: install n1's release")
    [v] = toolkit.judge_toolkit_same("n2", "n1", toolkit.toolkit_identity(version("1.19.0"), config()), same)
    assert v.seen == "NVIDIA Container Toolkit version '1.19.0'" and v.expected == "'1.18.1' as on n1"


def test_garbled_runtime_config_is_refused():
    with pytest.raises(ParseError):
        config(AUTO.replace('mode = "auto"', 'mode = "auto'))
    with pytest.raises(ParseError):
        config(AUTO.replace("-- /etc/docker/daemon.json: absent --", "-- /etc/docker/daemon.json --\n{runtimes"))
    with pytest.raises(ParseError):
        parse("nvidia_ctk_version", "nvidia-ctk: command not found\n")
