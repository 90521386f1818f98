"""wc_bench_combine.py's word count, tuple API, without combining."""
from wc_bench import TimedSentences
from wc_bench_combine import OnesCount, OnesSplit, build

topology = build(TimedSentences, OnesSplit, OnesCount)
