# gb10check's pytest plugin (--cluster, --report-dir, the private parametrization); it is also an entry point of the
# installed package. The suite's fixtures are loaded by tests/conftest.py, for the suite's tests only.
pytest_plugins = ["gb10check.plugin"]
