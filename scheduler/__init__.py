"""Schedulers: launching, updating and killing topologies on a cluster."""
from squall.scheduler.base import Scheduler, SchedulerError

__all__ = ["Scheduler", "SchedulerError"]
