"""Algorithm building blocks: networks, distributions, losses, and the algorithms."""
