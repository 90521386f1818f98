"""The UI in container 0 of a topology on YARN, as a page of its Skein application.

``python -m squall.ui.container --topology T --state FILE``: container 0's
script starts it beside the executor (``yarn/spec.py``, ``squall.ui.yarn``).
It serves the UI for the state manager of the run's state address on a free
port of the node, and adds it to the Skein application's web UI as the page
``squall`` (``ApplicationClient.ui.add_page``): the application's tracking
URL (Skein's web UI, through YARN's web proxy) links to it, at
``<proxy>/pages/squall/``, where the UI's relative links keep working. The
actions' token is ``squall.ui.token`` when the site config sets one, else a
random one, written to this process's log (``ui.log`` in the container's log
folder, readable by the application's owner).

It ends with its container: when the executor dies (it gets SIGTERM, as
runtime processes do), on SIGTERM, or once the topology's state is gone.
Where Skein's master cannot be reached (no ``skein`` package, or the
emulation in tests/yarn, which runs no application master), it logs why and
serves without the page.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Optional

log = logging.getLogger("squall.ui.container")
PAGE = "squall"


def add_page(url: str) -> Optional[str]:
    """Register ``url`` as the Skein application's page ``squall``; its proxied address, or None (logged)."""
    try:
        import skein

        page = skein.ApplicationClient.from_current().ui.add_page(PAGE, url, link_name="Squall")
        return page.address
    except Exception as e:  # no skein here, no master to reach, or the master refused: serve without the page
        log.warning("the UI is not a page of the Skein application (%s: %s); it is still at %s",
                    type(e).__name__, e, url)
        return None


def main(argv: Optional[list] = None) -> int:
    from squall.conf import base_config
    from squall.state import Kind, StateAddress
    from squall.supervision import die_with_parent
    from squall.ui.app import make_app
    from squall.ui.capacity import reports_dir
    from squall.ui.context import UiContext
    from squall.ui.metrics import MetricsCache
    from squall.ui.server import bind, token_of
    import uvicorn

    p = argparse.ArgumentParser(prog="python -m squall.ui.container")
    p.add_argument("--topology", required=True)
    p.add_argument("--state", required=True, help="the run's state address file (state.json)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s [c0 ui %(process)d] %(name)s: %(message)s")
    die_with_parent()
    config = base_config()
    state = StateAddress.read(args.state).open()
    state.start()
    token, made = token_of(config)
    sock = bind("0.0.0.0", 0)
    host = os.environ.get("NM_HOST") or "127.0.0.1"
    url = f"http://{host}:{sock.getsockname()[1]}/"
    server = uvicorn.Server(uvicorn.Config(make_app(UiContext(state, config, MetricsCache(state), token,
                                                              reports_dir(config))),
                                          log_level="warning", access_log=False, timeout_graceful_shutdown=5))

    def on_execution(execution: object) -> None:
        if execution is None:
            log.info("topology %r is gone: stopping", args.topology)
            server.should_exit = True

    cancel = state.watch(Kind.EXECUTION_STATE, args.topology, on_execution)
    try:
        log.info("serving the UI of topology %r at %s", args.topology, url)
        log.info("actions need the token: %s", token) if made else log.info("actions need squall.ui.token")
        proxied = add_page(url)
        if proxied:
            log.info("a page of the Skein application: %s", proxied)
        server.run(sockets=[sock])
    finally:
        cancel()
        state.close()
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
