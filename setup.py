"""Packaging that pyproject.toml cannot say: the suite's checks (tests/) ship inside the package as gb10check.tests,
and the clone's pytest.ini and cluster.example.yaml beside them, so the wheel runs the same suite as the clone (one
copy of each in the repository; gb10check/suite.py finds them in either place)."""

from pathlib import Path

from setuptools import find_namespace_packages, find_packages, setup
from setuptools.command.build_py import build_py

ROOT_FILES = ("pytest.ini", "cluster.example.yaml")  # copied into the built package: gb10check/pytest.ini ...


class BuildWithSuiteFiles(build_py):
    def run(self):
        super().run()
        if not getattr(self, "editable_mode", False):  # an editable install reads them from the clone
            for name in ROOT_FILES:
                self.copy_file(name, str(Path(self.build_lib) / "gb10check" / name))


setup(
    # Namespace packages: the data folders (profiles/, sim/assets/) are packages too, as setuptools wants them named.
    packages=find_namespace_packages(include=["gb10check", "gb10check.*"], exclude=["*.__pycache__"])
    + ["gb10check.tests"] + [f"gb10check.tests.{p}" for p in find_packages("tests")],
    package_dir={"gb10check.tests": "tests"},
    cmdclass={"build_py": BuildWithSuiteFiles},
)
