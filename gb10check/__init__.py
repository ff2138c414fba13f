"""gb10check: pre-flight, network and serving checks for vLLM across GB10 machines."""

__version__ = "0.1.0"
