"""The fixtures of the UI tests: ``local`` (ui_words on the local cluster and a ``squall ui`` serving it,
shared by this folder's tests: the API tests run first, the browser's after them) and ``browser``."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from browser import browser  # noqa: E402,F401
from ui_harness import local  # noqa: E402,F401
