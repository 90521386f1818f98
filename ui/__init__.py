"""The web UI and its REST API (``squall ui``): see and steer topologies, packing, the cluster and capacity.

An optional extra (``squall[ui]``: FastAPI, uvicorn, Jinja2); runtime
processes never import it. docs/ui.md describes the API and the pages.
"""
