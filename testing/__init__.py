"""Test harnesses for users' topologies and Squall's own tests (``squall.testing``)."""
