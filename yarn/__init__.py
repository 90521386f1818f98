"""YARN through Skein: application specs and the YARN scheduler."""
