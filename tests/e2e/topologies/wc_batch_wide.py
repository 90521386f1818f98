"""wc_batch.py's word count, rows and columns mixed, with one sentence, two split and two count tasks:
every word crosses processes to its count task by fields grouping."""
from wc_batch import build

topology = build(2, 2)
