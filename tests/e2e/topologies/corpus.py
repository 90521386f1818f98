"""The finite corpus and the split bolt the word-count test topologies share."""
from collections import Counter

from squall import Bolt

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def sentence(i):
    return " ".join(WORDS[(i * 5 + k * 3) % len(WORDS)] for k in range(1 + i % 5))


def expected(n):
    """Word counts of the first ``n`` sentences."""
    counts = Counter()
    for i in range(n):
        counts.update(sentence(i).split())
    return counts


class Split(Bolt):
    outputs = ["word"]

    def process(self, tup):
        for word in tup["sentence"].split():
            self.emit([word], anchors=[tup])
