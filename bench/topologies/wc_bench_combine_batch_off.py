"""wc_bench_combine.py's word count, batch API, without combining."""
from wc_bench_batch import BatchSentences
from wc_bench_combine import BatchOnesCount, BatchOnesSplit, build

topology = build(BatchSentences, BatchOnesSplit, BatchOnesCount)
