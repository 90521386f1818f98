"""Module-level components and streamlets for test_combine_declaration.py (build() imports them by name)."""
import operator

from window_components import CountTotals, ProcessingTotals, Totals

from squall import Bolt, Builder, Window


def add_counts(a, b):
    return [a[0], a[1] + b[1], a[2]]


class Adds(Bolt):
    combine = staticmethod(add_counts)


class MethodCombine(Bolt):
    def combine(self, a, b):
        return a


class WindowedAdds(ProcessingTotals):
    combine = staticmethod(add_counts)


class EventTimeAdds(Totals):
    combine = staticmethod(add_counts)


class CountAdds(CountTotals):
    combine = staticmethod(add_counts)


streamlets = Builder("combining")
keyed = streamlets.source([("a", 1)])
keyed.reduce_by_key(operator.add).named("running")
keyed.reduce_by_key(operator.add, combine=True).named("combined")
keyed.reduce_by_key_and_window(Window.tumbling(duration=1.0), operator.add).named("per_second")
keyed.reduce_by_key_and_window(Window.tumbling(duration=1.0), operator.add, timestamp=lambda v: v).named("by_time")
keyed.reduce_by_key_and_window(Window.tumbling(count=10), operator.add).named("per_ten")
