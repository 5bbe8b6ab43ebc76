"""Experiments: grids of algorithms × environments × seeds run as one resumable unit, and the
report that sums them up (:mod:`jaxrl_fdg.experiment.report`)."""
