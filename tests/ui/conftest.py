"""The fixtures of the UI tests: ``local`` (ui_words on the local cluster and a ``squall ui`` serving it,
shared by this folder's tests: the API tests run first, the browser's after them) and ``browser``."""
from browser import browser  # noqa: F401
from ui_harness import local  # noqa: F401
