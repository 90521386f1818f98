"""The health manager: sensors -> symptoms -> diagnoses -> resolutions (docs/health.md).

It runs in container 0 (the leader only), every ``squall.health.interval.secs``,
and acts through the scheduler's update. ``model`` holds the types its parts share.
"""
