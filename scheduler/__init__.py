"""Schedulers: launching, updating and killing topologies on a cluster."""
