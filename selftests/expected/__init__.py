"""Facts asserted for every real capture, one module per capture folder (one owner per tool).

Keys are capture paths: "perftest/x.txt" lies in ../shared/captures (public, read in place);
"ours/nvidia_smi/x.txt" lies in selftests/captures (outputs our own runs produced). Values are
(parse kind, {path into the JSON form of the facts: value}); see test_facts_captures.dig.
"""

import importlib
import pkgutil

EXPECTED: dict[str, tuple[str, dict]] = {}
for _module in pkgutil.iter_modules(__path__):
    EXPECTED.update(importlib.import_module(f"{__name__}.{_module.name}").EXPECTED)
