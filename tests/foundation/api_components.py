"""Module-level components and groupings used by the foundation tests."""
import os
from squall import Bolt, CustomGrouping, Spout, Stream


class WordSpout(Spout):
    outputs = ["word", "n"]


class MultiSpout(Spout):
    outputs = [Stream(["word"]), Stream(["a", "b"], name="pairs"), Stream(["x"], name="direct", direct=True)]


class PassBolt(Bolt):
    outputs = ["word"]


class SinkBolt(Bolt):
    pass


class EvenGrouping(CustomGrouping):
    def __init__(self, modulo=2):
        self.modulo = modulo

    def choose_tasks(self, values):
        return [self.target_tasks[len(values[0]) % self.modulo]]


class NotAGrouping:
    pass


class Unserialisable(CustomGrouping):
    def __init__(self):
        self.lock = object()

    def choose_tasks(self, values):
        return []


class NeedsPath(Bolt):
    """A bolt whose config must name a path (``check_config``) that exists (``preflight``)."""

    @classmethod
    def check_config(cls, config):
        if not config.get("needs.path"):
            raise ValueError("needs.path is not set: name a directory")

    @classmethod
    def preflight(cls, config):
        if not os.path.isdir(config["needs.path"]):
            raise OSError(f"needs.path {config['needs.path']} is not a directory")
