"""Power drivers: how a node is switched on and off (BMCs over IPMI, the RMS, the simulator)."""
