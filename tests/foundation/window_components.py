"""Module-level windowed bolts used by the foundation tests (build() imports components by name)."""
from squall import Spout, Stream, Window, WindowedBolt


class StampedSpout(Spout):
    outputs = ["key", "amount", "ts"]


class Totals(WindowedBolt):
    outputs = [Stream(["key", "total"]), Stream(["key", "amount", "ts"], name="late")]
    window = Window.sliding(duration=10, every=2)
    timestamp_field = "ts"
    lag = 1.0
    late_stream = "late"

    def process_window(self, window):
        pass


class ProcessingTotals(WindowedBolt):
    outputs = ["total"]
    window = Window.tumbling(duration=0.5)

    def process_window(self, window):
        pass


class CountTotals(WindowedBolt):
    outputs = ["total"]
    window = Window.sliding(count=100, every=20)

    def process_window(self, window):
        pass


class NoWindow(WindowedBolt):
    def process_window(self, window):
        pass


class NoProcessWindow(WindowedBolt):
    window = Window.tumbling(count=3)


class OwnProcess(CountTotals):
    def process(self, tup):
        pass


class ReduceNoMerge(WindowedBolt):
    window = Window.sliding(duration=4, every=2)

    def reduce(self, acc, tup):
        return acc

    def process_window(self, window):
        pass


class BadField(Totals):
    timestamp_field = "when"


class UndeclaredLate(Totals):
    late_stream = "too_late"


class NarrowLate(Totals):
    outputs = [Stream(["key", "total"]), Stream(["key"], name="late")]


class LateInProcessingTime(ProcessingTotals):
    late_stream = "default"


class CountEventTime(CountTotals):
    timestamp_field = "ts"
