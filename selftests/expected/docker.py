"""Facts asserted for the captures of docker/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "docker/docker-inspect-vllm-container-running-jethac.json": (
        "docker_inspect", {
            "status": "running",
            "running": True,
            "oom_killed": False,
            "network_mode": "host",
            "ipc_mode": "host",
            "restart_policy": "no",
            "memory_limit_gib": None,
            "command.0": "vllm",
            "command.1": "serve",
        }),
    "docker/docker-image-inspect-rootfs-jethac.json": (
        "docker_image_inspect", {
            "architecture": "arm64",
            "os": "linux",
            "#layers": 27,
            "id": "sha256:5f55c2af45936fd3e2ace1b779a19a972b469f750048c8ff58ddea48633ed1f8",
        }),
    "docker/docker-inspect-State.Health-healthy-jq-idx52801479953.json": (
        "docker_health", {
            "status": "healthy",
            "failing_streak": 0,
            "last_exit_code": 0,
        }),
    "docker/compose-ps-healthy-ipv6-colon-ports-idx17127618458.txt": (
        "compose_ps", {
            "#": 2,
            "0.name": "auth_api_app",
            "0.state": "running",
            "0.health": None,
            "1.health": "healthy",
            "0.ports": "0.0.0.0:80->80/tcp, :::80->80/tcp",
        }),
    "docker/compose-ps-sha256-image-weeks-uptime-idx67010038943.txt": (
        "compose_ps", {
            "#": 2,
            "1.status": "Up 2 weeks (healthy)",
            "0.service": "api",
            "0.ports": "127.0.0.1:8787->8000/tcp",
        }),
    "docker/compose-config-include-3svc-default-null-idx41743795395.txt": (
        "compose_config", {
            "name": "compose",
            "services.A.image": "nginx",
            "services.C.networks.default": None,
        }),
    "docker/compose-config-ports-ingress-healthcheck-no-default-net-idx56630107744.txt": (
        "compose_config", {
            "services.postgres.ports.0.published": "5432",
            "services.postgres.healthcheck.retries": 10,
        }),
}
