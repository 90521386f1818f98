"""The Kafka bolt's pure rules: how a tuple becomes a record, and the effectively-once bookkeeping."""
import json

import pytest

from squall.connectors.kafka import commits
from squall.connectors.kafka.records import encoder, to_bytes


def test_by_default_the_value_is_the_tuple_as_a_json_object_and_there_is_no_key():
    encode = encoder(["word", "count", "raw"], None, None)
    key, value = encode(["a", 3, b"x"])
    assert key is None and json.loads(value) == {"word": "a", "count": 3, "raw": "x"}


def test_key_and_value_fields_bytes_as_is_strings_utf8_the_rest_json():
    encode = encoder(["word", "count"], "word", "count")
    assert encode(["é", 3]) == ("é".encode(), b"3")
    assert encoder(["k", "v"], "k", "v")([b"\x00", {"a": [1]}]) == (b"\x00", b'{"a":[1]}')
    assert encoder(["k", "v"], None, "v")(["x", None]) == (None, None)  # a null value: a tombstone
    assert to_bytes(1.5) == b"1.5"


def test_a_key_or_value_field_the_stream_lacks_is_named():
    with pytest.raises(ValueError, match=r"kafka.key.field is 'id', but the input tuples have the fields \['word'\]"):
        encoder(["word"], "id", None)
    with pytest.raises(ValueError, match="kafka.value.field is 'v'"):
        encoder(["word"], None, "v")


def test_an_entry_commits_its_checkpoints_up_to_one_in_order_and_forgets_them():
    entry = commits.new_entry("t.k.0of1", "t.k.0of1.n", 7)
    commits.add(entry, 3, [(b"k", b"a")])
    commits.add(entry, 5, [(None, b"b"), (None, b"c")])
    commits.add(entry, 8, [(None, b"d")])
    assert commits.due(entry, 2) == (None, [])
    assert commits.due(entry, 5) == (5, [[b"k", b"a"], [None, b"b"], [None, b"c"]])
    assert commits.due(entry, 9, committed=5) == (8, [[None, b"d"]])  # a recovery: what the marker lacks
    commits.drop(entry, 5)
    assert [c for c, _ in entry["checkpoints"]] == [8]


def test_markers_say_the_highest_checkpoint_an_owner_committed():
    mine, other = "t.k.0of2.aa", "t.k.1of2.bb"
    records = [commits.marker(mine, 3), commits.marker(other, 9), commits.marker(mine, 6), (b"junk", b"{}")]
    assert commits.committed_upto(mine, records) == 6
    assert commits.committed_upto("t.k.0of2.zz", records) == 0
    # the same partition in every process: CRC-32, not Python's salted hash
    assert commits.marker_partition(mine, 4) == commits.marker_partition(mine, 4) == __import__("zlib").crc32(mine.encode()) % 4


def test_entry_keys_are_per_transactional_id():
    assert commits.entry_key("a") == ("kafka.bolt.pending", "a")
    assert commits.is_entry_key(commits.entry_key("a")) and not commits.is_entry_key("kafka.bolt.pending")
