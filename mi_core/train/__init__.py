"""Short training loops over the core's functions."""
