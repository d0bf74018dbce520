"""Thermal-aware scheduling (issue 15): the RC + recirculation model, the paper's MILP
formulations, the Coolest and Spatio-Temporal heuristics, and the thermal guard."""
