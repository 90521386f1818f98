"""State managers: where topology plans and locations live (local directory or ZooKeeper)."""
