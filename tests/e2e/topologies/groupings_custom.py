"""A custom grouping: value ``n`` (at position ``index``) goes to ``target_tasks[n % len]``."""
from squall import CustomGrouping


class ModuloGrouping(CustomGrouping):
    def __init__(self, index):
        self.index = index

    def choose_tasks(self, values):
        return [self.target_tasks[values[self.index] % len(self.target_tasks)]]
