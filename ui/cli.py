"""``squall ui``: serve the web UI and its REST API for every topology of the state manager."""
from __future__ import annotations

import argparse
import sys
from squall.commandline import Subcommands, add_config_options
from squall.conf import base_config


def register(sub: Subcommands) -> None:
    p = sub.add_parser("ui", help="serve the web UI and REST API (pages, metrics, packing, actions)",
                       description="Serve the UI and its REST API (docs/ui.md) for the topologies of the state "
                                   "manager the config names (local or ZooKeeper). Prints its URL, and the token "
                                   "its actions need unless squall.ui.token sets one.")
    p.add_argument("--port", type=int, help="port to listen on (squall.ui.port; 0: any free port)")
    p.add_argument("--host", help="address to listen on (squall.ui.host)")
    add_config_options(p)
    p.set_defaults(func=cmd_ui)


def cmd_ui(args: argparse.Namespace) -> int:
    from squall.state import StateAddress, make_state_manager
    from squall.ui.app import make_app
    from squall.ui.capacity import reports_dir
    from squall.ui.context import UiContext
    from squall.ui.metrics import MetricsCache
    from squall.ui.server import bind, serve, token_of, ui_config, url_of

    config = ui_config(base_config(args.config_path), args.config_property)
    host = args.host if args.host is not None else config["squall.ui.host"]
    port = args.port if args.port is not None else config["squall.ui.port"]
    token, made = token_of(config)
    sock = bind(host, port)
    state = make_state_manager(config)
    state.start()
    try:
        ctx = UiContext(state, config, MetricsCache(state), token, reports_dir(config))
        app = make_app(ctx)
        print(f"squall ui: {url_of(sock, host)} (state: {StateAddress.from_config(config).describe()})")
        print(f"  actions need the token: {token}" if made else "  actions need the token squall.ui.token sets")
        sys.stdout.flush()
        serve(app, sock)
    finally:
        state.close()
        sock.close()
    return 0
