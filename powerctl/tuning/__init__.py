"""Tuning the HGFS node power policy by replay: NSGA-II over its parameters (EECluster)."""
