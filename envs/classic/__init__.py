"""Classic-control environments."""
