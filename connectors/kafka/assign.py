"""Which Kafka partitions a spout task reads: a pure rule, the same in every task and run.

Not the group protocol (``subscribe`` and rebalances): the spout's tasks split the partitions among
themselves by task index, so a checkpoint's positions (keyed by partition) are owned by exactly one task
and a rollback or a rescale never waits on a group rebalance.
"""
from __future__ import annotations

from typing import Iterable, List, Sequence, Tuple

TopicPartitionKey = Tuple[str, int]


def assign_partitions(partitions: Iterable[TopicPartitionKey], index: int, parallelism: int) -> List[TopicPartitionKey]:
    """The partitions task ``index`` of ``parallelism`` reads: the i-th of the sorted ``(topic, partition)``
    list goes to task ``i % parallelism``."""
    if parallelism < 1 or not 0 <= index < parallelism:
        raise ValueError(f"task index {index} is not one of {parallelism} tasks")
    return [tp for i, tp in enumerate(sorted(set(partitions))) if i % parallelism == index]


def task_index(task_id: int, component_tasks: Sequence[int]) -> Tuple[int, int]:
    """``(index, parallelism)`` of ``task_id`` among its component's tasks (ascending task ids)."""
    tasks = sorted(component_tasks)
    if task_id not in tasks:
        raise ValueError(f"task {task_id} is not one of its component's tasks {tasks}")
    return tasks.index(task_id), len(tasks)
