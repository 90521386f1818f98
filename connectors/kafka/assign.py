"""Which Kafka partitions a spout task reads: a pure rule, the same in every task and run.

Not the group protocol (``subscribe`` and rebalances): the spout's tasks split the partitions among
themselves by task index, so a checkpoint's positions (keyed by partition) are owned by exactly one task
and a rollback or a rescale never waits on a group rebalance.

The rule is round robin per topic: partition ``p`` of topic ``t`` goes to task ``(p + h(t)) % parallelism``,
``h`` the stable hash fields grouping uses. Each topic's partitions are spread evenly (the tasks' counts
differ by one at most), the topics' first partitions are spread by their hash, and -- what a round robin
over the sorted list of every partition would not give -- a partition added to a topic, or a topic that
appears, never moves a partition already read to another task: its position is in its task's state, and
only a rollback (a rescale: every task sees every position) may move it.
"""
from __future__ import annotations

from typing import Iterable, List, Sequence, Tuple

from squall.stateful import stable_hash

TopicPartitionKey = Tuple[str, int]


def owner(tp: TopicPartitionKey, parallelism: int) -> int:
    """The task index (of ``parallelism``) that reads ``(topic, partition)``."""
    topic, partition = tp
    return (partition + stable_hash([topic])) % parallelism


def assign_partitions(partitions: Iterable[TopicPartitionKey], index: int, parallelism: int) -> List[TopicPartitionKey]:
    """The partitions task ``index`` of ``parallelism`` reads, sorted."""
    if parallelism < 1 or not 0 <= index < parallelism:
        raise ValueError(f"task index {index} is not one of {parallelism} tasks")
    return [tp for tp in sorted(set(partitions)) if owner(tp, parallelism) == index]


def task_index(task_id: int, component_tasks: Sequence[int]) -> Tuple[int, int]:
    """``(index, parallelism)`` of ``task_id`` among its component's tasks (ascending task ids)."""
    tasks = sorted(component_tasks)
    if task_id not in tasks:
        raise ValueError(f"task {task_id} is not one of its component's tasks {tasks}")
    return tasks.index(task_id), len(tasks)
