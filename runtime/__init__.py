"""The runtime processes: executor, tmaster, stmgr, instance, metricsmgr."""
