"""wc_combine.py's word count at 2/3/3."""
from wc_combine import build

topology = build("wc_combine_wide", 2, 3, 3)
