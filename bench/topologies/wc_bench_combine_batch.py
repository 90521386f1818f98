"""wc_bench_combine.py's word count, batch API, combining."""
from wc_bench_batch import BatchSentences
from wc_bench_combine import BatchCombiningCount, BatchOnesSplit, build

topology = build(BatchSentences, BatchOnesSplit, BatchCombiningCount)
