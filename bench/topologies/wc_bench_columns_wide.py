"""wc_bench_columns.py's columnar word count in the shape of wc_bench.py: one sentence, two split and
two count tasks; every word crosses processes to its count task by fields grouping, as columns."""
from wc_bench_columns import build

topology = build(2, 2)
