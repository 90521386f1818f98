"""Serving the UI: one uvicorn server on a socket bound before it starts (so its URL is known)."""
from __future__ import annotations

import secrets
import socket
from typing import Any, Mapping

from squall.conf import Config, ConfigError, parse_property, registry, unknown_key_warning
from squall.errors import SquallError


def ui_config(base: Config, properties: list) -> Config:
    """``base`` with ``--config-property`` values over it; an unknown ``squall.*``/``topology.*`` key is
    refused, naming the nearest known one."""
    layer = dict(parse_property(p) for p in properties)
    for key in layer:
        if key not in registry() and unknown_key_warning(key):
            raise ConfigError(f"--config-property {key}: {unknown_key_warning(key)}")
    return base.with_layer(layer, "--config-property")


def token_of(config: Mapping[str, object]) -> tuple:
    """``(token, made)``: ``squall.ui.token``, or a random one (``made``: print it, nobody else knows it)."""
    token = config["squall.ui.token"]
    return (token, False) if token else (secrets.token_urlsafe(18), True)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (0: any free port); a SquallError naming it when that fails."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise SquallError(f"squall ui cannot listen on {host}:{port}: {e.strerror}") from None
    sock.listen(128)
    return sock


def url_of(sock: socket.socket, advertised: str) -> str:
    port = sock.getsockname()[1]
    host = advertised if advertised not in ("", "0.0.0.0", "::") else socket.gethostname()
    return f"http://{host}:{port}/"


def serve(app: Any, sock: socket.socket) -> None:
    """Serve ``app`` on ``sock`` until SIGINT or SIGTERM (uvicorn's handlers end it cleanly)."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=5))
    server.run(sockets=[sock])
